/**
 * message_seat, the controller's half of one delivery, step one: admission. In one
 * transaction, before any effect: the operator call receipt (a repeated id returns the
 * original and never dispatches again) and, for a known seat, the delivery receipt in
 * state "dispatching". Then the seat's turn (dispatch.ts) does the rest.
 */
import type { UnrecordedOutcomes } from "./unrecorded-outcomes.js";
import { and, eq, or } from "drizzle-orm";
import { callFingerprint, contentFingerprint } from "../../shared/fingerprint.js";
import { isUuid, newDeliveryId } from "../../shared/ids.js";
import { InvalidArgumentError, JournalUnavailableError, ServiceStoppingError } from "../../shared/errors.js";
import type { DeliveryMode } from "../../shared/verdicts.js";
import type { Logger } from "../../shared/logger.js";
import type { Db } from "../db/open.js";
import { machines, seats, type Machine, type SeatRowDb } from "../db/schema.js";
import { admitCall, CallState, settleCall, type Admission } from "../journal/call-receipts.js";
import { openDelivery } from "../journal/delivery-receipts.js";
import type { AgentClients } from "../nodes/agent-clients.js";
import type { SeatTurns } from "./seat-turns.js";
import type { MessageSeatBody, ToolOutcome } from "./result-bodies.js";
import { replayAdmission } from "./replay.js";
import { dispatchInTurn } from "./dispatch.js";

export const MESSAGE_SEAT = "message_seat";
/** How long the controller waits for an agent's answer before the delivery is uncertain. */
export const DELIVER_TIMEOUT_MS = 20_000;

export interface MessageSeatInput {
  seat: string;
  message: string;
  delivery?: "steer" | "queue" | undefined;
  inReplyTo?: string | undefined;
}

export interface CallScope {
  conversationId: string;
  /** The id from `_meta["clankie/seat-call"].deliveryId`, when the caller minted one. */
  deliveryId?: string | undefined;
}

/** Fault injection for the crash-window suites: the pipeline parks at this point until the process is killed or stopping. */
export type FaultPoint = "hang_after_admit" | "hang_after_agent_reply";

export interface PipelineDeps {
  db: Db;
  agents: AgentClients;
  turns: SeatTurns;
  logger: Logger;
  /** Wall clock for journal times and the 5-minute release; injectable in tests. */
  now: () => Date;
  isStopping: () => boolean;
  /** Aborted when the controller stops: in-flight calls then answer uncertain. */
  shutdownSignal: AbortSignal;
  onJournalChange: () => void;
  /** This controller process; its in-flight receipts are recovered if it dies. */
  instanceId: string;
  deliverTimeoutMs?: number;
  /** Registers an in-flight dispatch so a stop can wait for it. */
  track?: <T>(p: Promise<T>) => Promise<T>;
  /** Settles the journal could not commit, retried until it is back. */
  unrecorded: UnrecordedOutcomes;
  /** Called after a seat took a delivery: a good moment for its pending notices. */
  onDelivered?: (seatId: string) => void;
  fault?: FaultPoint | undefined;
}

type Plan =
  | { kind: "replay"; admission: Exclude<Admission, { kind: "admitted" }> }
  | { kind: "settled"; body: MessageSeatBody }
  | { kind: "dispatch"; seat: SeatRowDb; machine: Machine };

export async function messageSeat(deps: PipelineDeps, scope: CallScope, input: MessageSeatInput): Promise<ToolOutcome> {
  if (deps.isStopping()) throw new ServiceStoppingError();
  const id = scope.deliveryId ?? newDeliveryId();
  if (!isUuid(id)) throw new InvalidArgumentError(`_meta["clankie/seat-call"].deliveryId must be a UUID, got ${JSON.stringify(id)}`);
  const mode: DeliveryMode = input.delivery ?? "auto";
  const fingerprint = callFingerprint(MESSAGE_SEAT, input);
  const base = { schemaVersion: 1 as const, deliveryId: id, seat: input.seat };

  let plan: Plan;
  try {
    plan = await deps.db.transaction(async (tx) => {
      const admission = await admitCall(tx, { id, tool: MESSAGE_SEAT, conversationId: scope.conversationId, fingerprint, controllerInstance: deps.instanceId });
      if (admission.kind !== "admitted") return { kind: "replay", admission } as const;
      // The seat and its machine in one read.
      const rows = await tx
        .select({ seat: seats, machine: machines })
        .from(seats)
        .leftJoin(machines, eq(machines.name, seats.machine))
        .where(and(eq(seats.present, true), or(eq(seats.id, input.seat), eq(seats.name, input.seat))));
      const found = rows.map((r) => r.seat);
      if (found.length !== 1) {
        const body: MessageSeatBody = {
          ...base,
          outcome: "unknown_seat",
          deliveryStage: "rejected",
          reason: found.length === 0 ? "unknown_seat" : "ambiguous_seat",
          detail: found.length === 0 ? `no seat is named ${input.seat}; nothing was sent` : `${found.length} seats are named ${input.seat}; use machine/name; nothing was sent`,
        };
        await settleCall(tx, id, CallState.Settled, body, deps.now());
        return { kind: "settled", body } as const;
      }
      const seat = found[0]!;
      const machine = rows[0]!.machine;
      if (!machine) throw new Error(`seat ${seat.id} names unknown machine ${seat.machine}`);
      await openDelivery(tx, { id, conversationId: scope.conversationId, seatId: seat.id, contentFingerprint: contentFingerprint(input.message), mode, inReplyTo: input.inReplyTo });
      return { kind: "dispatch", seat, machine } as const;
    });
  } catch (e) {
    throw new JournalUnavailableError(`the receipt journal could not be written, so nothing was dispatched: ${(e as Error).message}`, e);
  }
  deps.onJournalChange();

  if (plan.kind === "replay") return replayAdmission(MESSAGE_SEAT, id, plan.admission);
  if (plan.kind === "settled") return { id, tool: MESSAGE_SEAT, state: "settled", body: plan.body, isError: false };
  const dispatched = dispatchInTurn(deps, { conversationId: scope.conversationId, id, mode, input, admittedSeat: plan.seat });
  return deps.track ? deps.track(dispatched) : dispatched;
}
