/**
 * message_seat, step four: the settle, the one place receipts are settled, for every path: a dispatch's
 * outcome (the settle statement, with the lease's release or hand-over), and an unresolved original
 * resolved by reconcile, the owner or the unattended release, on what the seat's session proves
 * (session-evidence.ts). Each tells the status watch, and the notifier when a fence opened or closed.
 *
 * A dispatch's settle the journal cannot take is kept (unrecorded-outcomes.ts, on disk when
 * the controller has a state dir) and recorded when the journal is back or at the next boot,
 * before recovery looks at in-flight receipts: a decided answer is never turned into another.
 */
import { sql } from "drizzle-orm";
import { contentFingerprint } from "../../shared/fingerprint.js";
import { traceSettle } from "../../shared/rpc/trace-context.js";
import { ReceiptState, isUnresolved } from "../../shared/verdicts.js";
import { journalCause } from "../db/error-text.js";
import type { Db } from "../db/open.js";
import { type DeliveryReceipt, settlements } from "../db/schema.js";
import { CallState, findCallById, settleCall } from "../journal/call-receipts.js";
import { type DeliveryOutcome, settleDelivery, settleIfUnresolved } from "../journal/delivery-receipts.js";
import { resolveFence } from "../journal/fences.js";
import {
  FencedWriteError,
  assertLeaseHeld,
  isFencedWrite,
  leaseHeldGuard,
  type InstanceEpoch,
} from "../journal/instances.js";
import { json, p, statement, ts } from "../journal/statements.js";
import { MESSAGE_SEAT, leaseMsOf, type PipelineDeps } from "./pipeline.js";
import type { DispatchRecord, SeatTurn, SettleParams } from "./receipt-types.js";
import {
  uncertainBody,
  type LeadBody,
  type MessageSeatBody,
  type SettledOriginalBody,
  type ToolOutcome,
  type UncertainBody,
} from "./result-bodies.js";
import { handOnSql, NOTIFIED, TURN_CLAIM_MS } from "./turn-statements.js";

/**
 * Records a dispatch's outcome, body, fence, `previous` and the turn in one statement.
 * Returns the journal's error when it could not (the outcome is then kept and retried).
 */
async function record(
  deps: PipelineDeps,
  d: DispatchRecord,
  turn: SeatTurn | undefined,
  callState: SettleParams["callState"],
  body: MessageSeatBody | UncertainBody,
  outcome: DeliveryOutcome,
  previousIds: string[],
): Promise<unknown> {
  const params: SettleParams = {
    id: d.id,
    seatId: d.seatId,
    conversationId: d.conversationId,
    contentFingerprint: contentFingerprint(d.message),
    callState,
    body: body as unknown as SettleParams["body"],
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

/** A call's answer to the lead: an uncertain one is an error to the lead, a settled one is not. */
function answer(id: string, state: "settled" | "uncertain", body: LeadBody): ToolOutcome {
  return { id, tool: MESSAGE_SEAT, state, body, isError: state === "uncertain" };
}

const uncertain = (id: string, detail: string) => answer(id, "uncertain", uncertainBody(MESSAGE_SEAT, id, detail));

/** Settles a dispatch with a definite outcome: the lead hears the truth when nothing was sent, uncertainty when something was and it is not on record. */
export async function settleDispatch(
  deps: PipelineDeps,
  d: DispatchRecord,
  turn: SeatTurn | undefined,
  body: MessageSeatBody,
  outcome: DeliveryOutcome,
  previousIds: string[] = [],
): Promise<ToolOutcome> {
  const failed = await record(deps, d, turn, CallState.Settled, body, outcome, previousIds);
  if (isFencedWrite(failed)) return answerAsRecorded(deps, d.id, `the outcome (${body.outcome}) was not recorded`);
  if (failed && outcome.state === ReceiptState.NotSent)
    return answer(d.id, "settled", {
      ...body,
      detail: `${body.detail}; the journal could not record this yet (${journalCause(failed)}) and will when it is back`,
    });
  if (failed)
    return uncertain(
      d.id,
      `the outcome (${body.outcome}) could not be recorded (${journalCause(failed)}); it will be when the journal is back, and nothing is resent`,
    );
  if (body.outcome === "delivered") deps.hooks?.onDelivered?.(d.seatId);
  return answer(d.id, "settled", body);
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
  const outcome = { state: ReceiptState.Uncertain, reason, detail };
  const failed = await record(deps, d, turn, CallState.Uncertain, body, outcome, []);
  if (isFencedWrite(failed)) return answerAsRecorded(deps, d.id, "the uncertain outcome was not recorded");
  return answer(d.id, "uncertain", body);
}

/**
 * The answer of a call whose own record was refused (its instance's lease epoch is no longer live,
 * ADR 0036): the receipt as the fleet now records it — uncertain after a peer's takeover — never
 * the outcome this replica saw, which it may no longer write.
 */
export async function answerAsRecorded(deps: PipelineDeps, id: string, what: string): Promise<ToolOutcome> {
  const call = await findCallById(deps.db, id).catch(() => undefined);
  if (call?.result && (call.state === CallState.Settled || call.state === CallState.Uncertain))
    return answer(id, call.state === CallState.Settled ? "settled" : "uncertain", call.result as unknown as LeadBody);
  return uncertain(
    id,
    `this controller replica lost its instance lease while the call was in flight, so ${what}; the receipt is as the fleet records it (still in flight: recovery will mark it uncertain); it will not be resent — reconcile it`,
  );
}

/**
 * The settle of one dispatched delivery in ONE statement, one commit (ADR 0013): the call
 * receipt and its lead-facing body, the delivery receipt's outcome, the fence an unresolved
 * outcome leaves, the `previous` originals it reported, and the seat's lease — handed to the
 * head of the seat's line, on whichever replica it waits (ADR 0039), or released. The next delivery
 * can only take the turn once this outcome (and its fence) is visible.
 */
const settleStatement = statement<Record<string, unknown>>(
  "settle",
  () => sql`
with call as (
  update operator_call_receipts set state = ${p("callState")}::text, result = ${p("body")}::text::jsonb, settled_at = ${p("callSettledAt")}::timestamptz
  where id = ${p("id")}::text
    and (${p("ownerInstance")}::text is null or (controller_instance = ${p("ownerInstance")}::text and controller_epoch = ${p("ownerEpoch")}::bigint))
    and (${p("instance")}::text is null or ${leaseHeldGuard()})
  returning id
),
receipt as (
  update delivery_receipts set state = ${p("state")}::text, reason = ${p("reason")}::text, detail = ${p("detail")}::text,
    native_receipt_id = ${p("nativeReceiptId")}::text, native_message_id = ${p("nativeMessageId")}::text, native_session_path = ${p("nativeSessionPath")}::text, proof_age_ms = ${p("proofAgeMs")}::int, proofs = ${p("proofs")}::text::jsonb,
    settled_at = ${p("receiptSettledAt")}::timestamptz
  where id = ${p("id")}::text and exists (select 1 from call) returning id
),
fence as (
  insert into fences (delivery_id, seat_id, content_fingerprint, conversation_id, opened_at)
  select id, ${p("seatId")}::text, ${p("contentFingerprint")}::text, ${p("conversationId")}::text, ${p("now")}::timestamptz from receipt where ${p("openFence")}::boolean
  on conflict do nothing returning delivery_id
),
reported as (
  update fences set previous_reported_at = ${p("now")}::timestamptz
  where delivery_id in (select jsonb_array_elements_text(${p("previousIds")}::text::jsonb)) and exists (select 1 from call) returning delivery_id
),
${handOnSql(sql`exists (select 1 from call)`)}
select (select count(*) from call)::int as calls, (select count(*) from receipt)::int as receipts,
  (select count(*) from released)::int + (select count(*) from handed)::int as lease_moved,
  (select holder from handed) as handed_to, ${NOTIFIED}
`,
);

/**
 * Returns the holder the lease went to (null: released, or it was not ours any more).
 * `writer` is the instance writing (the admitting one, or at boot the one replaying a stopped
 * instance's decided outcome); a FencedWriteError when its lease is not live or the call is no
 * longer the admitting epoch's: nothing was written (the seat's lease and line included), and
 * retrying cannot change that.
 */
export async function settleDispatched(
  db: Db,
  s: SettleParams,
  writer: InstanceEpoch | undefined = s.fence,
): Promise<{ handedTo: string | null }> {
  const unresolved = isUnresolved(s.outcome.state);
  const [row] = await settleStatement(db).run({
    id: s.id,
    callState: s.callState,
    body: json(s.body),
    callSettledAt: s.callState === CallState.Settled ? ts(s.now) : null,
    state: s.outcome.state,
    reason: s.outcome.reason ?? null,
    detail: s.outcome.detail ?? null,
    nativeReceiptId: s.outcome.nativeReceiptId ?? null,
    nativeMessageId: s.outcome.nativeMessageId ?? null,
    nativeSessionPath: s.outcome.nativeSessionPath ?? null,
    proofAgeMs: s.outcome.proofAgeMs ?? null,
    proofs: json(s.outcome.proofs),
    receiptSettledAt: unresolved ? null : ts(s.now),
    seatId: s.seatId,
    contentFingerprint: s.contentFingerprint,
    conversationId: s.conversationId,
    now: ts(s.now),
    openFence: unresolved,
    previousIds: JSON.stringify(s.previousIds),
    holder: s.holder,
    leaseSeconds: s.leaseSeconds,
    claimSeconds: TURN_CLAIM_MS / 1000,
    ownerInstance: s.fence?.instance ?? null,
    ownerEpoch: s.fence?.epoch ?? null,
    instance: writer?.instance ?? null,
    epoch: writer?.epoch ?? null,
  });
  if (!row || Number(row.calls) !== 1)
    throw new FencedWriteError(writer ?? { instance: "(none)", epoch: 0 }, `the settle of ${s.id}`);
  return { handedTo: row.handed_to ? String(row.handed_to) : null };
}

/**
 * The settle paths for an unresolved original (ADR 0207, VUH-2358 and VUH-1779). None of them ever
 * resends: the lead's not-delivered, the unattended release and the owner's abandoned-unknown all keep
 * the original as abandoned-unknown evidence; an original found in the recipient's session is recorded
 * as delivered instead, and one its mailbox proves absent for good as not sent.
 */
export type SettledBy = "lead" | "owner" | "unattended" | "reconcile";

/** What an original's settle uses: the journal, the clock, this instance's lease fence, and whom to tell. */
export type OriginalSettleDeps = Pick<PipelineDeps, "db" | "now" | "onJournalChange" | "hooks"> & {
  lease: Pick<PipelineDeps["lease"], "fence">;
};

interface OriginalSettle {
  outcome: DeliveryOutcome;
  body: SettledOriginalBody;
  /** Who settled it and on what evidence, kept as a settlement row (not for an original found in the session). */
  settlement?: { settledBy: SettledBy; conversationId: string | null; evidence: Record<string, unknown> };
  /** Settle it only if still unresolved: false when another path settled it first. */
  ifUnresolved?: boolean;
}

/**
 * One transaction under the writer's live lease (ADR 0036): the receipt, the settlement, the call's body
 * and the fence; then the status watch hears of it, and the notifier that the seat's fence closed.
 */
async function settleOriginal(deps: OriginalSettleDeps, delivery: DeliveryReceipt, s: OriginalSettle) {
  const now = deps.now();
  const fence = deps.lease.fence();
  const settled = await deps.db.transaction(async (tx) => {
    await assertLeaseHeld(tx, fence, `the settle of ${delivery.id}`);
    if (!s.ifUnresolved) await settleDelivery(tx, delivery.id, s.outcome, now);
    else if (!(await settleIfUnresolved(tx, delivery.id, s.outcome, now))) return false;
    if (s.settlement)
      await tx.insert(settlements).values({
        deliveryId: delivery.id,
        disposition: s.outcome.state,
        settledBy: s.settlement.settledBy,
        conversationId: s.settlement.conversationId,
        evidence: { previousState: delivery.state, ...s.settlement.evidence },
        at: now,
      });
    await settleCall(tx, delivery.id, CallState.Settled, s.body as unknown as Record<string, unknown>, now);
    await resolveFence(tx, delivery.id, s.outcome.state, now);
    return true;
  });
  if (!settled) return false;
  deps.onJournalChange();
  deps.hooks?.onFenceChange?.(delivery.seatId);
  return true;
}

/** An unresolved original, kept as abandoned-unknown evidence (lead, owner, unattended); its id and content stay refused. */
export async function settleAbandoned(
  deps: OriginalSettleDeps,
  delivery: DeliveryReceipt,
  settledBy: Exclude<SettledBy, "reconcile">,
  conversationId: string | null,
  evidence: Record<string, unknown>,
): Promise<SettledOriginalBody> {
  const detail =
    settledBy === "lead"
      ? "settled by the lead as not delivered; the original is kept as abandoned-unknown evidence and is never resent"
      : settledBy === "owner"
        ? "settled by the owner as abandoned-unknown; the original is kept as evidence, its id stays refused, and it is never resent"
        : "released unattended: the recipient was idle and its session, read in full, did not hold the original; kept as abandoned-unknown evidence, never resent";
  const state = ReceiptState.AbandonedUnknown;
  const body: SettledOriginalBody = {
    schemaVersion: 1,
    outcome: "undelivered",
    deliveryStage: "unavailable",
    state,
    deliveryId: delivery.id,
    seat: delivery.seatId,
    detail,
  };
  const outcome = { state, reason: `${settledBy}_settled`, detail };
  await settleOriginal(deps, delivery, { outcome, body, settlement: { settledBy, conversationId, evidence } });
  return body;
}

/** An unresolved original the seat's session holds: recorded as delivered (evidence, not a send). */
export async function settleFoundInSession(
  deps: OriginalSettleDeps,
  delivery: DeliveryReceipt,
  nativeReceiptId: string,
  by: "session" | "acknowledgment" = "session",
): Promise<SettledOriginalBody> {
  const detail =
    by === "session"
      ? "the original is in the recipient's session; recorded as delivered at reconciliation"
      : "the recipient's native channel acknowledged the original's exact id (transport only); recorded as delivered at the settle, never resent";
  const reason = by === "session" ? "found_in_session" : "exact_acknowledgment";
  const body: SettledOriginalBody = {
    schemaVersion: 1,
    outcome: "delivered",
    deliveryStage: "delivered",
    deliveryId: delivery.id,
    seat: delivery.seatId,
    nativeReceiptId,
    detail,
  };
  await settleOriginal(deps, delivery, {
    outcome: { state: ReceiptState.Delivered, reason, detail, nativeReceiptId },
    body,
  });
  return body;
}

/**
 * An original its mailbox proves absent and whose id its agent fenced, so no write of it can happen
 * any more (rule 30): recorded as not sent; undefined when another path settled it first.
 */
export async function settleProvenAbsent(
  deps: OriginalSettleDeps,
  delivery: DeliveryReceipt,
  conversationId: string,
  proof: Record<string, unknown>,
): Promise<SettledOriginalBody | undefined> {
  const detail =
    "the recipient's mailbox does not hold the original, no write of it was in progress, " +
    "and its agent now refuses to write it: recorded as not sent at reconciliation; nothing was resent";
  const body: SettledOriginalBody = {
    schemaVersion: 1,
    outcome: "undelivered",
    deliveryStage: "unavailable",
    state: ReceiptState.NotSent,
    reason: "proven_absent",
    deliveryId: delivery.id,
    seat: delivery.seatId,
    detail,
    proof,
  };
  const settled = await settleOriginal(deps, delivery, {
    outcome: { state: ReceiptState.NotSent, reason: "proven_absent", detail },
    body,
    settlement: { settledBy: "reconcile", conversationId, evidence: proof },
    ifUnresolved: true,
  });
  return settled ? body : undefined;
}
