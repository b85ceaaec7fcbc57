/**
 * message_seat, step four: the settle, the one place receipts are settled, for every path: a dispatch's
 * outcome (one statement with the lease's release or hand-over, settle-statements.ts), and an unresolved
 * original resolved by reconcile, the owner or the unattended release, on what the seat's session proves
 * (session evidence, below). Each tells the status watch, and the notifier when a fence opened or closed.
 *
 * A dispatch's settle the journal cannot take is kept (unrecorded-outcomes.ts, on disk when
 * the controller has a state dir) and recorded when the journal is back or at the next boot,
 * before recovery looks at in-flight receipts: a decided answer is never turned into another.
 */
import { contentFingerprint } from "../../shared/fingerprint.js";
import { traceSettle } from "../../shared/rpc/trace-context.js";
import { ReceiptState, isUnresolved, seatStatusWire, type SeatStatus } from "../../shared/verdicts.js";
import { type DeliveryReceipt, machines, seats } from "../db/schema.js";
import { CallState, findCallById } from "../journal/call-receipts.js";
import { isFencedWrite } from "../journal/instances.js";
import type { DeliveryOutcome } from "../journal/delivery-receipts.js";
import {
  abandonDelivery,
  recordFoundInSession,
  recordProvenAbsent,
  settleDispatched,
  type SettledBy,
  type SettleParams,
} from "./settle-statements.js";
import { MESSAGE_SEAT, leaseMsOf, type PipelineDeps } from "./pipeline.js";
import { journalCause } from "../db/error-text.js";
import { uncertainBody, type MessageSeatBody, type SettledOriginalBody, type ToolOutcome } from "./result-bodies.js";
import type { SeatTurn } from "./turn.js";
import type { DispatchRecord } from "./receipt-types.js";
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { ReadSessionRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import type { Db } from "../db/open.js";
import type { AgentClients } from "../nodes/agent-clients.js";

/** A journal error in words a lead can read: the driver's cause, never the SQL. */
export function journalError(e: unknown): string {
  return journalCause(e);
}

/**
 * Records a dispatch's outcome, body, fence, `previous` and the turn in one statement.
 * Returns the journal's error when it could not (the outcome is then kept and retried).
 */
async function record(
  deps: PipelineDeps,
  d: DispatchRecord,
  turn: SeatTurn | undefined,
  callState: SettleParams["callState"],
  body: SettleParams["body"],
  outcome: DeliveryOutcome,
  previousIds: string[],
): Promise<unknown> {
  const params: SettleParams = {
    id: d.id,
    seatId: d.seatId,
    conversationId: d.conversationId,
    contentFingerprint: contentFingerprint(d.message),
    callState,
    body,
    outcome,
    previousIds,
    holder: turn?.held && !turn.finished ? turn.holder : null,
    leaseSeconds: leaseMsOf(deps.deliverTimeoutMs) / 1000,
    now: deps.now(),
    fence: d.fence,
  };
  try {
    const { handedTo } = await traceSettle(() => settleDispatched(deps.db, params));
    turn?.settled(handedTo);
    deps.onJournalChange();
    if (isUnresolved(outcome.state)) deps.hooks?.onFenceChange?.(d.seatId);
    return undefined;
  } catch (e) {
    if (isFencedWrite(e)) {
      // Refused for good (ADR 0036): never retried; the seat's turn passes on, its lease is the fleet's to free.
      deps.logger.error(
        "settle refused: this replica's lease epoch is no longer live; the receipt stays as the fleet records it",
        { deliveryId: d.id, state: outcome.state, epoch: d.fence.epoch },
      );
      if (turn) deps.turns.leaveLater(turn);
      return e;
    }
    deps.logger.error("settle failed", { deliveryId: d.id, state: outcome.state, error: (e as Error).message });
    deps.hooks?.metrics?.journalError("settle");
    // The retry carries the seat's lease and hands it on in its own statement: the next delivery
    // to the seat goes only once this outcome is on record. Releasing the lease apart let the next
    // one reach the seat before this settle landed (two in flight at a PostgreSQL promotion, issue 34).
    // A settle that committed though its answer was lost finds the lease moved already and moves nothing.
    const parked = params.holder !== null ? turn : undefined;
    parked?.park();
    deps.unrecorded.add(`settle ${d.id} (${outcome.state})`, params, (recorded, refused) => {
      if (!parked) return;
      if (refused) {
        parked.settled(null);
        deps.turns.releaseLater(parked.seatId, parked.holder);
      } else parked.settled((recorded as { handedTo?: string | null } | undefined)?.handedTo ?? null);
    });
    if (turn && !parked) deps.turns.leaveLater(turn);
    return e;
  }
}

/** Settles a dispatch with a definite outcome: the lead hears the truth when nothing was sent, uncertainty when something was and it is not on record. */
export async function settleDispatch(
  deps: PipelineDeps,
  d: DispatchRecord,
  turn: SeatTurn | undefined,
  body: MessageSeatBody,
  outcome: DeliveryOutcome,
  previousIds: string[] = [],
): Promise<ToolOutcome> {
  const failed = await record(
    deps,
    d,
    turn,
    CallState.Settled,
    body as unknown as Record<string, unknown>,
    outcome,
    previousIds,
  );
  if (isFencedWrite(failed)) return answerAsRecorded(deps, d.id, `the outcome (${body.outcome}) was not recorded`);
  if (failed) {
    if (outcome.state === ReceiptState.NotSent) {
      const pending: MessageSeatBody = {
        ...body,
        detail: `${body.detail}; the journal could not record this yet (${journalError(failed)}) and will when it is back`,
      };
      return { id: d.id, tool: MESSAGE_SEAT, state: "settled", body: pending, isError: false };
    }
    return {
      id: d.id,
      tool: MESSAGE_SEAT,
      state: "uncertain",
      body: uncertainBody(
        MESSAGE_SEAT,
        d.id,
        `the outcome (${body.outcome}) could not be recorded (${journalError(failed)}); it will be when the journal is back, and nothing is resent`,
      ),
      isError: true,
    };
  }
  if (body.outcome === "delivered") deps.hooks?.onDelivered?.(d.seatId);
  return { id: d.id, tool: MESSAGE_SEAT, state: "settled", body, isError: false };
}

/** A lost answer: uncertain on the receipt and to the lead, fenced, never resent. */
export async function settleUncertain(
  deps: PipelineDeps,
  d: DispatchRecord,
  turn: SeatTurn | undefined,
  detail: string,
  reason: "answer_lost" | "controller_stopped" = "answer_lost",
): Promise<ToolOutcome> {
  const body = uncertainBody(MESSAGE_SEAT, d.id, detail);
  const failed = await record(
    deps,
    d,
    turn,
    CallState.Uncertain,
    body as unknown as Record<string, unknown>,
    { state: ReceiptState.Uncertain, reason, detail },
    [],
  );
  if (isFencedWrite(failed)) return answerAsRecorded(deps, d.id, "the uncertain outcome was not recorded");
  return { id: d.id, tool: MESSAGE_SEAT, state: "uncertain", body, isError: true };
}

/**
 * The answer of a call whose own record was refused (its instance's lease epoch is no longer live,
 * ADR 0036): the receipt as the fleet now records it — uncertain after a peer's takeover — never
 * the outcome this replica saw, which it may no longer write.
 */
export async function answerAsRecorded(deps: PipelineDeps, id: string, what: string): Promise<ToolOutcome> {
  const detail = `this controller replica lost its instance lease while the call was in flight, so ${what}; the receipt is as the fleet records it`;
  const call = await findCallById(deps.db, id).catch(() => undefined);
  if (call?.state === CallState.Settled && call.result)
    return {
      id,
      tool: MESSAGE_SEAT,
      state: "settled",
      body: call.result as unknown as MessageSeatBody,
      isError: false,
    };
  if (call?.state === CallState.Uncertain && call.result)
    return {
      id,
      tool: MESSAGE_SEAT,
      state: "uncertain",
      body: call.result as unknown as MessageSeatBody,
      isError: true,
    };
  return {
    id,
    tool: MESSAGE_SEAT,
    state: "uncertain",
    body: uncertainBody(
      MESSAGE_SEAT,
      id,
      `${detail} (still in flight: recovery will mark it uncertain); it will not be resent — reconcile it`,
    ),
    isError: true,
  };
}

/** An unresolved original, kept as abandoned-unknown evidence (lead, owner, unattended). */
export async function settleAbandoned(
  deps: PipelineDeps,
  delivery: DeliveryReceipt,
  settledBy: Exclude<SettledBy, "reconcile">,
  conversationId: string | null,
  evidence: Record<string, unknown>,
): Promise<SettledOriginalBody> {
  const body = (await abandonDelivery(deps.db, {
    delivery,
    settledBy,
    conversationId,
    evidence,
    now: deps.now(),
    fence: deps.lease.fence(),
  })) as unknown as SettledOriginalBody;
  deps.onJournalChange();
  deps.hooks?.onFenceChange?.(delivery.seatId);
  return body;
}

/** An unresolved original the seat's session holds: recorded as delivered (evidence, not a send). */
export async function settleFoundInSession(
  deps: PipelineDeps,
  delivery: DeliveryReceipt,
  nativeReceiptId: string,
  by: "session" | "acknowledgment" = "session",
): Promise<SettledOriginalBody> {
  const body = (await recordFoundInSession(
    deps.db,
    delivery,
    nativeReceiptId,
    deps.now(),
    deps.lease.fence(),
    by,
  )) as unknown as SettledOriginalBody;
  deps.onJournalChange();
  deps.hooks?.onFenceChange?.(delivery.seatId);
  return body;
}

/** An original its mailbox proves absent for good: recorded as not sent; undefined when settled meanwhile. */
export async function settleProvenAbsent(
  deps: PipelineDeps,
  delivery: DeliveryReceipt,
  conversationId: string,
  proof: Record<string, unknown>,
): Promise<SettledOriginalBody | undefined> {
  const recorded = await recordProvenAbsent(deps.db, delivery, conversationId, proof, deps.now(), deps.lease.fence());
  const body = recorded as unknown as SettledOriginalBody | undefined;
  if (!body) return undefined;
  deps.onJournalChange();
  deps.hooks?.onFenceChange?.(delivery.seatId);
  return body;
}

/** What a seat's session proves about one delivery id, read through its agent's ReadSession. */
export type SessionEvidence =
  | { kind: "found"; nativeReceiptId: string; status: SeatStatus }
  /** `writeTurn`: the turn the original's write joined or waited behind (rule 39), where the harness has turn ids. */
  | { kind: "absent"; status: SeatStatus; writeTurn?: "terminal" | "active" | "unknown" }
  | { kind: "unreadable"; detail: string };

/** What the original was: an entry under its id counts only when it matches (rule 30). */
export interface OriginalCheck {
  contentFingerprint: string;
  /** The occupant the original was admitted for; null on receipts older than the column. */
  occupantId?: string | null | undefined;
  /** Rule 42: the native message id and session file the write was answered with (Pi); null when unknown. */
  nativeMessageId?: string | null | undefined;
  nativeSessionPath?: string | null | undefined;
}

/**
 * Reads the session; a partial read or any failure is a gap, never a verdict. Rule 30: an
 * entry is the original only under its exact id, with the original's content, read from the
 * occupant the controller knows for this seat, which must be the occupant the original was
 * admitted for (the recipient binding is the seat read). A
 * matching body under another id never counts, and a mismatch is a gap, not an absence.
 */
export async function sessionEvidence(
  db: Db,
  agents: AgentClients,
  seatIdValue: string,
  deliveryId: string,
  sinceMs: number,
  original?: OriginalCheck,
): Promise<SessionEvidence> {
  const [seat] = await db.select().from(seats).where(eq(seats.id, seatIdValue));
  if (!seat) return { kind: "unreadable", detail: "the seat is no longer registered" };
  const [machine] = await db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine) return { kind: "unreadable", detail: "the seat's machine is no longer registered" };
  try {
    const conn = agents.get(machine.name, machine.endpoint, machine.agentToken);
    const res = await conn.client.readSession(
      create(ReadSessionRequestSchema, {
        seatName: seat.name,
        sinceUnixMs: BigInt(Math.max(0, sinceMs - 60_000)),
        deliveryId,
      }),
      { timeoutMs: 10_000 },
    );
    const status = seatStatusWire.decode(res.status) ?? "unknown";
    if (res.occupantId && res.occupantId !== seat.occupantId)
      return {
        kind: "unreadable",
        detail: `the session read belongs to occupant ${res.occupantId}, not ${seat.occupantId}`,
      };
    // A later occupant's session is not the recipient's: it proves neither presence nor absence.
    const wrote = original?.occupantId;
    if (wrote && wrote !== (res.occupantId || seat.occupantId)) {
      return {
        kind: "unreadable",
        detail: `the original was written to occupant ${wrote}; the seat now has occupant ${res.occupantId || seat.occupantId}, whose session proves nothing about it`,
      };
    }
    // A mailbox written before ids were canonical may name it in upper case (issue 32 item 4).
    const hit = res.entries.find((e) => e.deliveryId.toLowerCase() === deliveryId.toLowerCase());
    if (hit && original && hit.contentFingerprint !== original.contentFingerprint) {
      return { kind: "unreadable", detail: "the session holds this id with other content: it is not the original" };
    }
    // Rule 42: a receipt that kept its native message id and session file is found only at that entry in that file.
    if (hit && original?.nativeSessionPath && res.sessionPath !== original.nativeSessionPath) {
      return {
        kind: "unreadable",
        detail: `the session read was ${res.sessionPath || "not a session file"}, not the recorded ${original.nativeSessionPath}`,
      };
    }
    if (hit && original?.nativeMessageId && hit.nativeReceiptId !== original.nativeMessageId) {
      return {
        kind: "unreadable",
        detail: `the session holds this delivery under entry ${hit.nativeReceiptId}, not the recorded ${original.nativeMessageId}: it is not the original`,
      };
    }
    if (hit) return { kind: "found", nativeReceiptId: hit.nativeReceiptId, status };
    const writeTurn =
      res.writeTurn === "terminal" || res.writeTurn === "active"
        ? res.writeTurn
        : res.writeTurn
          ? "unknown"
          : undefined;
    return res.complete
      ? { kind: "absent", status, ...(writeTurn ? { writeTurn } : {}) }
      : { kind: "unreadable", detail: "the session was read only in part" };
  } catch (e) {
    return { kind: "unreadable", detail: (e as Error).message };
  }
}
