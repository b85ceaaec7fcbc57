/**
 * message_seat, step two, inside the seat's turn: take the turn (in-process queue, then
 * the database lease, ≤25 s), recheck the seat, release stale fences unattended, refuse a
 * resend of an unresolved original's content, make the one Deliver call, and settle.
 * A failure before the request could reach the agent is a definite not-sent; after that,
 * a lost answer is uncertain and is never retried.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { AuthoritySchema, DeliverRequestSchema, type DeliverResponse } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { contentFingerprint } from "../../shared/fingerprint.js";
import { ReceiptState, deliveryModeWire, isUnresolved, type DeliveryMode } from "../../shared/verdicts.js";
import { machines, seats, type SeatRowDb } from "../db/schema.js";
import { CallState, settleCall } from "../journal/call-receipts.js";
import { settleDelivery, type DeliveryOutcome } from "../journal/delivery-receipts.js";
import { contentFenceFor, markPreviousReported, openFence, unreportedPrevious } from "../journal/fences.js";
import { takeSeatLease, SEAT_TURN_WAIT_MS, type SeatLease } from "./seat-lease.js";
import { releaseStaleFences } from "./unattended-release.js";
import { bodyFromAgent, outcomeFromAgent, type BodyBase } from "./agent-verdict.js";
import { uncertainBody, type MessageSeatBody, type ToolOutcome } from "./result-bodies.js";
import { DELIVER_TIMEOUT_MS, MESSAGE_SEAT, type MessageSeatInput, type PipelineDeps } from "./message-seat.js";

export interface Admitted {
  conversationId: string;
  id: string;
  mode: DeliveryMode;
  input: MessageSeatInput;
  admittedSeat: SeatRowDb;
}

/** Settles this dispatch as a definite not-sent. */
type NotSent = (reason: string, detail: string, stage?: MessageSeatBody["deliveryStage"]) => Promise<ToolOutcome>;

/** The seat's turn as this dispatch holds it. */
interface Turn {
  lease?: SeatLease | undefined;
  /** Set just before the Deliver call: from then on a failure is never a definite not-sent. */
  agentCalled?: boolean;
}

/** Errors the agent raises only before touching the seat: the message was not written. */
const REFUSED_BEFORE_WRITE = new Set([Code.InvalidArgument, Code.Unauthenticated, Code.PermissionDenied, Code.NotFound, Code.FailedPrecondition, Code.Unimplemented]);

function parkUntilStopping(deps: PipelineDeps): Promise<void> {
  return new Promise((resolve) => {
    if (deps.shutdownSignal.aborted) return resolve();
    deps.shutdownSignal.addEventListener("abort", () => resolve(), { once: true });
  });
}

export async function dispatchInTurn(deps: PipelineDeps, a: Admitted): Promise<ToolOutcome> {
  const base: BodyBase = { schemaVersion: 1, deliveryId: a.id, seat: a.admittedSeat.id };
  // The seat's database lease once taken: every settle gives it back in its own transaction.
  const turn: Turn = {};
  const notSent: NotSent = (reason, detail, stage = "unavailable") =>
    settle(deps, a, { ...base, outcome: "undelivered", deliveryStage: stage, reason, detail }, { state: ReceiptState.NotSent, reason, detail }, [], turn);
  if (deps.fault === "hang_after_admit") {
    await parkUntilStopping(deps);
    return settleUncertain(deps, a, "the controller stopped before it reached the agent; the message was not resent", turn);
  }
  try {
    return await inTurn(deps, a, base, notSent, turn);
  } catch (e) {
    // Every path after the Deliver call settles without throwing; a throw here came from the
    // journal before anything was sent. That is definite, even if it cannot be recorded yet.
    if (turn.agentCalled) throw e;
    deps.logger.warn("journal failed before dispatch", { deliveryId: a.id, error: (e as Error).message });
    return notSent("journal_unavailable", `the receipt journal failed after this receipt was committed and before anything was sent (${journalError(e)})`);
  }
}

async function inTurn(deps: PipelineDeps, a: Admitted, base: BodyBase, notSent: NotSent, turn: Turn): Promise<ToolOutcome> {
  const waitStarted = performance.now();
  const local = await deps.turns.take(a.admittedSeat.id, SEAT_TURN_WAIT_MS);
  try {
    if (local.timedOut) return await notSent("seat_busy", `another delivery held ${a.admittedSeat.id} for ${SEAT_TURN_WAIT_MS / 1000} s; nothing was sent`);
    const leaseMs = (deps.deliverTimeoutMs ?? DELIVER_TIMEOUT_MS) + 10_000;
    const lease = await takeSeatLease(deps.db, a.admittedSeat.id, `${deps.instanceId}:${a.id}`, leaseMs, Math.max(0, SEAT_TURN_WAIT_MS - (performance.now() - waitStarted)));
    if (!lease) return await notSent("seat_busy", `another controller held ${a.admittedSeat.id} for ${SEAT_TURN_WAIT_MS / 1000} s; nothing was sent`);
    turn.lease = lease;
    try {
      return await checkAndDeliver(deps, a, base, notSent, turn);
    } finally {
      await lease.release().catch((e: Error) => deps.logger.warn("seat lease release failed; it will expire", { seat: a.admittedSeat.id, error: e.message }));
    }
  } finally {
    local.release();
  }
}

async function checkAndDeliver(deps: PipelineDeps, a: Admitted, base: BodyBase, notSent: NotSent, turn: Turn): Promise<ToolOutcome> {
  // The dispatch recheck, seat and machine in one read: losing the seat here is a definite not-sent, never uncertain.
  const [row] = await deps.db.select({ seat: seats, machine: machines }).from(seats).leftJoin(machines, eq(machines.name, seats.machine)).where(eq(seats.id, a.admittedSeat.id));
  const seat = row?.seat;
  if (!seat || !seat.present) return notSent("seat_gone", `${a.admittedSeat.id} is no longer registered; nothing was sent`);
  if (seat.occupantId !== a.admittedSeat.occupantId) return notSent("occupant_changed", `${seat.id} has a different occupant than when the message was admitted; nothing was sent`);
  const machine = row.machine;
  if (!machine) return notSent("seat_gone", `the machine of ${seat.id} is no longer registered; nothing was sent`);

  await releaseStaleFences(deps, seat);
  const fp = contentFingerprint(a.input.message);
  const original = await contentFenceFor(deps.db, seat.id, fp, a.id, deps.now());
  if (original) {
    const detail = `the same message to ${seat.id} is ${original.state} as ${original.id}; it is never resent. Reconcile that id, or settle it, before sending other text.`;
    const body: MessageSeatBody = { ...base, outcome: "undelivered", deliveryStage: "rejected", reason: "fenced_by_unresolved_original", detail, originalDeliveryId: original.id, originalState: original.state };
    return settle(deps, a, body, { state: ReceiptState.NotSent, reason: "fenced_by_unresolved_original", detail }, [], turn);
  }
  const previous = await unreportedPrevious(deps.db, seat.id, a.conversationId);

  const checkedAt = performance.now();
  const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
  if (!(await conn.connect())) {
    const body: MessageSeatBody = { ...base, outcome: "seat_offline", deliveryStage: "unavailable", reason: "agent_unreachable", detail: `the agent on ${machine.name} could not be reached at ${machine.endpoint}; nothing was sent` };
    return settle(deps, a, body, { state: ReceiptState.NotSent, reason: "agent_unreachable", detail: body.detail }, [], turn);
  }
  let res: DeliverResponse;
  turn.agentCalled = true;
  try {
    res = await conn.client.deliver(
      create(DeliverRequestSchema, {
        seatName: seat.name,
        deliveryId: a.id,
        text: a.input.message,
        mode: deliveryModeWire.encode(a.mode),
        conversationId: a.conversationId,
        inReplyTo: a.input.inReplyTo ?? "",
        authority: create(AuthoritySchema, { ageMs: Math.ceil(performance.now() - checkedAt), caller: a.conversationId, occupantId: seat.occupantId }),
      }),
      { timeoutMs: deps.deliverTimeoutMs ?? DELIVER_TIMEOUT_MS, signal: deps.shutdownSignal },
    );
  } catch (e) {
    const err = ConnectError.from(e);
    if (REFUSED_BEFORE_WRITE.has(err.code)) return notSent("agent_refused", `the agent refused the request before writing: ${err.rawMessage}`, "rejected");
    deps.logger.warn("delivery uncertain", { deliveryId: a.id, seat: seat.id, error: err.message });
    return settleUncertain(deps, a, `the request may have reached the agent on ${machine.name} but its answer was lost (${Code[err.code]}: ${err.rawMessage}); it will not be resent`, turn);
  }
  if (deps.fault === "hang_after_agent_reply") {
    await parkUntilStopping(deps);
    return settleUncertain(deps, a, "the controller stopped after the agent answered but before it recorded the answer; reconcile it", turn);
  }
  const body = bodyFromAgent(base, res);
  const sent = body.outcome === "delivered" || body.outcome === "unconfirmed";
  if (sent && previous.length) {
    body.previous = previous.map((p) => ({ deliveryId: p.deliveryId, state: p.disposition ?? "settled" }));
  }
  return settle(deps, a, body, outcomeFromAgent(res), sent ? previous.map((p) => p.deliveryId) : [], turn);
}

/** A journal error in words a lead can read: the driver's cause, never the SQL. */
function journalError(e: unknown): string {
  const cause = (e as { cause?: { message?: string; code?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message.split("\n")[0]!;
}

/**
 * Records the outcome, the fence it leaves (any unresolved state), the previous originals it
 * reported and the seat's lease in one transaction. When the journal cannot take it, the
 * outcome is kept and recorded when the journal is back (unrecorded-outcomes.ts); the error is
 * returned so the caller can tell the lead what it knows.
 */
async function recordOutcome(
  deps: PipelineDeps,
  a: Admitted,
  turn: Turn,
  r: { outcome: DeliveryOutcome; callState: Exclude<CallState, "in_flight">; body: Record<string, unknown>; previousIds: string[] },
): Promise<unknown> {
  const now = deps.now();
  const record = async () => {
    await deps.db.transaction(async (tx) => {
      await settleDelivery(tx, a.id, r.outcome, now);
      await settleCall(tx, a.id, r.callState, r.body, now);
      if (isUnresolved(r.outcome.state)) await openFence(tx, { id: a.id, seatId: a.admittedSeat.id, contentFingerprint: contentFingerprint(a.input.message), conversationId: a.conversationId }, now);
      await markPreviousReported(tx, r.previousIds, now);
      // The next delivery to this seat can only take the turn once this outcome (and any fence) is visible.
      await turn.lease?.releaseWithin(tx);
    });
    turn.lease?.markReleased();
    deps.onJournalChange();
  };
  try {
    await record();
    return undefined;
  } catch (e) {
    deps.logger.error("settle failed", { deliveryId: a.id, state: r.outcome.state, error: (e as Error).message });
    deps.unrecorded.add(`settle ${a.id} (${r.outcome.state})`, record);
    return e;
  }
}

/** Settles with the agent's (or the pipeline's) outcome; the lead hears the truth when nothing was sent, uncertainty when something was and it is not on record. */
async function settle(deps: PipelineDeps, a: Admitted, body: MessageSeatBody, outcome: DeliveryOutcome, previousIds: string[], turn: Turn): Promise<ToolOutcome> {
  const failed = await recordOutcome(deps, a, turn, { outcome, callState: CallState.Settled, body, previousIds });
  if (failed) {
    if (outcome.state === ReceiptState.NotSent) {
      const pending = { ...body, detail: `${body.detail}; the journal could not record this yet (${journalError(failed)}) and will when it is back` };
      return { id: a.id, tool: MESSAGE_SEAT, state: "settled", body: pending, isError: false };
    }
    return { id: a.id, tool: MESSAGE_SEAT, state: "uncertain", body: uncertainBody(MESSAGE_SEAT, a.id, `the outcome (${body.outcome}) could not be recorded (${journalError(failed)}); it will be when the journal is back, and nothing is resent`), isError: true };
  }
  if (body.outcome === "delivered") deps.onDelivered?.(a.admittedSeat.id);
  return { id: a.id, tool: MESSAGE_SEAT, state: "settled", body, isError: false };
}

/** A lost answer: uncertain on the receipt and to the lead, fenced, never resent. */
async function settleUncertain(deps: PipelineDeps, a: Admitted, detail: string, turn: Turn): Promise<ToolOutcome> {
  const body = uncertainBody(MESSAGE_SEAT, a.id, detail);
  await recordOutcome(deps, a, turn, { outcome: { state: ReceiptState.Uncertain, reason: "answer_lost", detail }, callState: CallState.Uncertain, body, previousIds: [] });
  return { id: a.id, tool: MESSAGE_SEAT, state: "uncertain", body, isError: true };
}
