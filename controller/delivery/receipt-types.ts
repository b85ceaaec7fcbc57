/**
 * The receipt vocabulary the four delivery steps share (admit.ts → turn.ts → dispatch.ts → settle.ts):
 * what the admission read about the seat, what a dispatch settles, and the receipt states that fence.
 * Types, one constant and one SQL fragment only, so every step can import it and it imports no step.
 */
import { sql } from "drizzle-orm";
import { ReceiptState } from "../../shared/verdicts.js";
import type { InstanceEpoch } from "../journal/instances.js";

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

export interface Admitted {
  /** False: the id already had a call receipt; nothing was written. */
  inserted: boolean;
  /** How many present seats matched the reference (exactly one is dispatched to). */
  seatsMatched: number;
  seat: AdmittedSeat | undefined;
  /** This delivery took the seat's lease in the admission commit. */
  leaseTaken: boolean;
  /** The unresolved (or recently abandoned) original with the same content, as of this statement. */
  original: { id: string; state: string } | undefined;
  staleFence: boolean;
  previous: { deliveryId: string; state: string }[];
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

/** What every message_seat body starts with. */
export type BodyBase = { schemaVersion: 1; deliveryId: string; seat: string };
