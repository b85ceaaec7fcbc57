/**
 * The one place receipts are settled, for every path: a dispatch's outcome (one statement
 * with the lease's release or hand-over, journal/outcome.ts), and an unresolved original
 * resolved by reconcile, the owner or the unattended release (journal/settle.ts). Each
 * tells the status watch, and the notifier when a fence opened or closed.
 *
 * A dispatch's settle the journal cannot take is kept (unrecorded-outcomes.ts, on disk when
 * the controller has a state dir) and recorded when the journal is back or at the next boot,
 * before recovery looks at in-flight receipts: a decided answer is never turned into another.
 */
import { contentFingerprint } from "../../shared/fingerprint.js";
import { traceSettle } from "../../shared/rpc/trace-context.js";
import { ReceiptState, isUnresolved } from "../../shared/verdicts.js";
import type { DeliveryReceipt } from "../db/schema.js";
import { CallState } from "../journal/call-receipts.js";
import type { DeliveryOutcome } from "../journal/delivery-receipts.js";
import { settleDispatched, type SettleParams } from "../journal/outcome.js";
import { abandonDelivery, recordFoundInSession, recordProvenAbsent, type SettledBy } from "../journal/settle.js";
import { MESSAGE_SEAT, leaseMsOf, type PipelineDeps } from "./pipeline.js";
import { journalCause } from "../db/error-text.js";
import { uncertainBody, type MessageSeatBody, type SettledOriginalBody, type ToolOutcome } from "./result-bodies.js";
import type { SeatTurn } from "./turn.js";

export interface DispatchRecord {
  id: string;
  conversationId: string;
  seatId: string;
  message: string;
}

/** A journal error in words a lead can read: the driver's cause, never the SQL. */
export function journalError(e: unknown): string {
  return journalCause(e);
}

/**
 * Records a dispatch's outcome, body, fence, `previous` and the turn in one statement.
 * Returns the journal's error when it could not (the outcome is then kept and retried).
 */
async function record(deps: PipelineDeps, d: DispatchRecord, turn: SeatTurn | undefined, callState: SettleParams["callState"], body: SettleParams["body"], outcome: DeliveryOutcome, previousIds: string[]): Promise<unknown> {
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
    nextHolder: turn?.held && !turn.finished ? turn.nextHolder() : null,
    leaseSeconds: leaseMsOf(deps) / 1000,
    now: deps.now(),
  };
  try {
    const { handed } = await traceSettle(() => settleDispatched(deps.db, params));
    turn?.settled(handed);
    deps.onJournalChange();
    if (isUnresolved(outcome.state)) deps.onFenceChange?.(d.seatId);
    return undefined;
  } catch (e) {
    deps.logger.error("settle failed", { deliveryId: d.id, state: outcome.state, error: (e as Error).message });
    deps.metrics?.journalError("settle");
    // The retry never touches the lease: the turn passes on now and its lease is given back
    // once the journal answers (a settle that commits late may have handed it on already).
    deps.unrecorded.add(`settle ${d.id} (${outcome.state})`, { ...params, holder: null, nextHolder: null });
    if (turn) deps.turns.leaveLater(turn);
    return e;
  }
}

/** Settles a dispatch with a definite outcome: the lead hears the truth when nothing was sent, uncertainty when something was and it is not on record. */
export async function settleDispatch(deps: PipelineDeps, d: DispatchRecord, turn: SeatTurn | undefined, body: MessageSeatBody, outcome: DeliveryOutcome, previousIds: string[] = []): Promise<ToolOutcome> {
  const failed = await record(deps, d, turn, CallState.Settled, body as unknown as Record<string, unknown>, outcome, previousIds);
  if (failed) {
    if (outcome.state === ReceiptState.NotSent) {
      const pending: MessageSeatBody = { ...body, detail: `${body.detail}; the journal could not record this yet (${journalError(failed)}) and will when it is back` };
      return { id: d.id, tool: MESSAGE_SEAT, state: "settled", body: pending, isError: false };
    }
    return { id: d.id, tool: MESSAGE_SEAT, state: "uncertain", body: uncertainBody(MESSAGE_SEAT, d.id, `the outcome (${body.outcome}) could not be recorded (${journalError(failed)}); it will be when the journal is back, and nothing is resent`), isError: true };
  }
  if (body.outcome === "delivered") deps.onDelivered?.(d.seatId);
  return { id: d.id, tool: MESSAGE_SEAT, state: "settled", body, isError: false };
}

/** A lost answer: uncertain on the receipt and to the lead, fenced, never resent. */
export async function settleUncertain(deps: PipelineDeps, d: DispatchRecord, turn: SeatTurn | undefined, detail: string, reason: "answer_lost" | "controller_stopped" = "answer_lost"): Promise<ToolOutcome> {
  const body = uncertainBody(MESSAGE_SEAT, d.id, detail);
  await record(deps, d, turn, CallState.Uncertain, body as unknown as Record<string, unknown>, { state: ReceiptState.Uncertain, reason, detail }, []);
  return { id: d.id, tool: MESSAGE_SEAT, state: "uncertain", body, isError: true };
}

/** An unresolved original, kept as abandoned-unknown evidence (lead, owner, unattended). */
export async function settleAbandoned(deps: PipelineDeps, delivery: DeliveryReceipt, settledBy: Exclude<SettledBy, "reconcile">, conversationId: string | null, evidence: Record<string, unknown>): Promise<SettledOriginalBody> {
  const body = (await abandonDelivery(deps.db, { delivery, settledBy, conversationId, evidence, now: deps.now() })) as unknown as SettledOriginalBody;
  deps.onJournalChange();
  deps.onFenceChange?.(delivery.seatId);
  return body;
}

/** An unresolved original the seat's session holds: recorded as delivered (evidence, not a send). */
export async function settleFoundInSession(deps: PipelineDeps, delivery: DeliveryReceipt, nativeReceiptId: string, by: "session" | "acknowledgment" = "session"): Promise<SettledOriginalBody> {
  const body = (await recordFoundInSession(deps.db, delivery, nativeReceiptId, deps.now(), by)) as unknown as SettledOriginalBody;
  deps.onJournalChange();
  deps.onFenceChange?.(delivery.seatId);
  return body;
}

/** An original its mailbox proves absent for good: recorded as not sent; undefined when settled meanwhile. */
export async function settleProvenAbsent(
  deps: PipelineDeps,
  delivery: DeliveryReceipt,
  conversationId: string,
  proof: Record<string, unknown>,
): Promise<SettledOriginalBody | undefined> {
  const recorded = await recordProvenAbsent(deps.db, delivery, conversationId, proof, deps.now());
  const body = recorded as unknown as SettledOriginalBody | undefined;
  if (!body) return undefined;
  deps.onJournalChange();
  deps.onFenceChange?.(delivery.seatId);
  return body;
}
