/**
 * The receipt vocabulary the four delivery steps share (admit.ts → turn.ts → dispatch.ts → settle.ts):
 * what the admission and the dispatch's recheck read about the seat, the seat's turn as a delivery holds
 * it, what a dispatch settles, and the receipt states that fence. Types, their one row read, one constant
 * and one SQL fragment, so every step can import it and it imports no step.
 */
import { sql } from "drizzle-orm";
import { ReceiptState } from "../../shared/verdicts.js";
import type { InstanceEpoch } from "../journal/instances.js";
import type { CallState } from "../journal/call-receipts.js";
import type { DeliveryOutcome } from "../journal/delivery-receipts.js";
import { asBool, type Row } from "../journal/statements.js";

/**
 * The unattended release (dispatch.ts, ADR 0207): an open fence older than this is due for it.
 * The admission and the recheck both read whether one is due.
 */
export const UNATTENDED_RELEASE_AFTER_MS = 5 * 60 * 1000;

/** The receipt states whose content is still unresolved, so it fences a resend of the same text. */
export const UNRESOLVED = sql.raw(
  `'${ReceiptState.Dispatching}', '${ReceiptState.Unconfirmed}', '${ReceiptState.Uncertain}'`,
);

export interface AdmittedSeat {
  id: string;
  name: string;
  occupantId: string;
  machine: { name: string; endpoint: string; agentToken: string } | null;
}

/** What the admission and the dispatch's recheck both read of the seat, as of their statement. */
export interface SeatSnapshot {
  seat: AdmittedSeat | undefined;
  /** The unresolved (or recently abandoned) original with the same content, as of this statement. */
  original: { id: string; state: string } | undefined;
  /** An open fence of the seat is due for the unattended release. */
  staleFence: boolean;
  /** Settled originals of this seat and conversation not yet reported (rule 28). */
  previous: { deliveryId: string; state: string }[];
}

export interface Admitted extends SeatSnapshot {
  /** False: the id already had a call receipt; nothing was written. */
  inserted: boolean;
  /** How many present seats matched the reference (exactly one is dispatched to). */
  seatsMatched: number;
  /** This delivery took the seat's lease in the admission commit. */
  leaseTaken: boolean;
}

/** The snapshot from a statement's row: both statements name its columns alike. */
export function seatSnapshotOf(r: Row | undefined): SeatSnapshot {
  return {
    seat: r?.seat_id
      ? {
          id: String(r.seat_id),
          name: String(r.seat_name),
          occupantId: String(r.occupant_id),
          machine: r.m_name
            ? { name: String(r.m_name), endpoint: String(r.m_endpoint), agentToken: String(r.m_agent_token) }
            : null,
        }
      : undefined,
    original: r?.original_id ? { id: String(r.original_id), state: String(r.original_state) } : undefined,
    staleFence: asBool(r?.stale_fence),
    previous: JSON.parse(String(r?.previous ?? "[]")) as { deliveryId: string; state: string }[],
  };
}

/** One dispatched delivery as its settle records it. */
export interface DispatchRecord {
  id: string;
  conversationId: string;
  seatId: string;
  message: string;
  /** The (instance, epoch) that admitted it: its settle is written under that epoch or not at all (ADR 0036). */
  fence: InstanceEpoch;
}

/**
 * The settle of one dispatched delivery, as settle.ts writes it in one statement and the unrecorded
 * outcomes keep it (on disk too) until the journal takes it: here, so that unrecorded-outcomes.ts,
 * which the pipeline's dependencies name, imports no step.
 */
export interface SettleParams {
  id: string;
  seatId: string;
  conversationId: string;
  contentFingerprint: string;
  callState: Exclude<CallState, "in_flight">;
  body: Record<string, unknown>;
  outcome: DeliveryOutcome;
  /** Settled originals this answer reported as `previous`. */
  previousIds: string[];
  /** The lease this delivery holds, if any: it goes to the head of the seat's line, or is released. */
  holder: string | null;
  leaseSeconds: number;
  now: Date;
  /**
   * The (instance, epoch) that admitted the call (ADR 0036): the settle applies only while the call
   * is still theirs (a peer's takeover clears its epoch) and the writer's lease is live. Absent only
   * in a spill file written before epochs: then it settles as it did before them.
   */
  fence?: InstanceEpoch | undefined;
}

/** How a delivery's admission came to the turn: it took the free seat's lease, or joined the line. */
export type TurnAdmission = "lease" | "queued";

/** The seat's turn as one delivery (or notice, or stop) holds it. */
export interface SeatTurn {
  readonly seatId: string;
  readonly holder: string;
  /** This holder has the seat's database lease. False after a 25 s wait: it goes on without the turn. */
  readonly held: boolean;
  readonly waitedMs: number;
  /** The settle statement gave the lease up: to `handedTo` (the head of the line), or released (null). */
  settled(handedTo: string | null): void;
  /** The lease was given up (or never held): nothing left to give back. */
  readonly finished: boolean;
  /** The turn's settle is retried with the lease (settle.ts): nothing gives it back until `settled`. */
  park(): void;
}

/** What every message_seat body starts with. */
export type BodyBase = { schemaVersion: 1; deliveryId: string; seat: string };
