/**
 * The settle statements (settle.ts runs them). Apart from settle.ts because unrecorded-outcomes.ts retries
 * them at boot and after an outage, and settle.ts needs the pipeline's dependencies, which name the
 * unrecorded outcomes: one file would close an import cycle.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { isUnresolved, ReceiptState } from "../../shared/verdicts.js";
import { type DeliveryOutcome, settleDelivery, settleIfUnresolved } from "../journal/delivery-receipts.js";
import { CallState, settleCall } from "../journal/call-receipts.js";
import { json, p, statement, ts } from "../journal/statements.js";
import { settlements, type DeliveryReceipt } from "../db/schema.js";
import { resolveFence } from "../journal/fences.js";
import { handOnSql, NOTIFIED, TURN_CLAIM_MS } from "./turn-statements.js";
import { FencedWriteError, assertLeaseHeld, leaseHeldGuard, type InstanceEpoch } from "../journal/instances.js";

/**
 * The settle of one dispatched delivery in ONE statement, one commit (ADR 0013): the call
 * receipt and its lead-facing body, the delivery receipt's outcome, the fence an unresolved
 * outcome leaves, the `previous` originals it reported, and the seat's lease — handed to the
 * head of the seat's line, on whichever replica it waits (ADR 0039), or released. The next delivery
 * can only take the turn once this outcome (and its fence) is visible.
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
 * The settle paths for an unresolved delivery (ADR 0207, VUH-2358 and VUH-1779). None of
 * them ever resends: the lead's not-delivered, the unattended release and the owner's
 * abandoned-unknown all keep the original as abandoned-unknown evidence; an original
 * found in the recipient's session is recorded as delivered instead.
 */
export type SettledBy = "lead" | "owner" | "unattended" | "reconcile";

export interface AbandonInput {
  delivery: DeliveryReceipt;
  settledBy: SettledBy;
  conversationId: string | null;
  evidence: Record<string, unknown>;
  now: Date;
  /** The writing instance: refused unless its lease is live (ADR 0036). */
  fence: InstanceEpoch;
}

/** Records the original as abandoned-unknown; its id and content stay refused. */
export async function abandonDelivery(db: Db, a: AbandonInput): Promise<Record<string, unknown>> {
  const detail =
    a.settledBy === "lead"
      ? "settled by the lead as not delivered; the original is kept as abandoned-unknown evidence and is never resent"
      : a.settledBy === "owner"
        ? "settled by the owner as abandoned-unknown; the original is kept as evidence, its id stays refused, and it is never resent"
        : "released unattended: the recipient was idle and its session, read in full, did not hold the original; kept as abandoned-unknown evidence, never resent";
  const body = {
    schemaVersion: 1,
    outcome: "undelivered",
    deliveryStage: "unavailable",
    state: ReceiptState.AbandonedUnknown,
    deliveryId: a.delivery.id,
    seat: a.delivery.seatId,
    detail,
  };
  await db.transaction(async (tx) => {
    await assertLeaseHeld(tx, a.fence, `the settle of ${a.delivery.id}`);
    await settleDelivery(
      tx,
      a.delivery.id,
      { state: ReceiptState.AbandonedUnknown, reason: `${a.settledBy}_settled`, detail },
      a.now,
    );
    await tx.insert(settlements).values({
      deliveryId: a.delivery.id,
      disposition: ReceiptState.AbandonedUnknown,
      settledBy: a.settledBy,
      conversationId: a.conversationId,
      evidence: { previousState: a.delivery.state, ...a.evidence },
      at: a.now,
    });
    await settleCall(tx, a.delivery.id, CallState.Settled, body, a.now);
    await resolveFence(tx, a.delivery.id, ReceiptState.AbandonedUnknown, a.now);
  });
  return body;
}

/** Records the original as delivered because the recipient's session holds it (evidence, not a send). */
export async function recordFoundInSession(
  db: Db,
  delivery: DeliveryReceipt,
  nativeReceiptId: string,
  now: Date,
  fence: InstanceEpoch,
  by: "session" | "acknowledgment" = "session",
): Promise<Record<string, unknown>> {
  const body = {
    schemaVersion: 1,
    outcome: "delivered",
    deliveryStage: "delivered",
    deliveryId: delivery.id,
    seat: delivery.seatId,
    nativeReceiptId,
    detail:
      by === "session"
        ? "the original is in the recipient's session; recorded as delivered at reconciliation"
        : "the recipient's native channel acknowledged the original's exact id (transport only); recorded as delivered at the settle, never resent",
  };
  await db.transaction(async (tx) => {
    await assertLeaseHeld(tx, fence, `the settle of ${delivery.id}`);
    await settleDelivery(
      tx,
      delivery.id,
      {
        state: ReceiptState.Delivered,
        reason: by === "session" ? "found_in_session" : "exact_acknowledgment",
        detail: body.detail,
        nativeReceiptId,
      },
      now,
    );
    await settleCall(tx, delivery.id, CallState.Settled, body, now);
    await resolveFence(tx, delivery.id, ReceiptState.Delivered, now);
  });
  return body;
}

/**
 * Records the original as not sent because its mailbox proves it absent and its agent fenced the id:
 * no write of it can happen any more (rule 30). Undefined when another path settled it first.
 */
export async function recordProvenAbsent(
  db: Db,
  delivery: DeliveryReceipt,
  conversationId: string,
  proof: Record<string, unknown>,
  now: Date,
  fence: InstanceEpoch,
): Promise<Record<string, unknown> | undefined> {
  const detail =
    "the recipient's mailbox does not hold the original, no write of it was in progress, " +
    "and its agent now refuses to write it: recorded as not sent at reconciliation; nothing was resent";
  const body = {
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
  const settled = await db.transaction(async (tx) => {
    await assertLeaseHeld(tx, fence, `the settle of ${delivery.id}`);
    const outcome = { state: ReceiptState.NotSent, reason: "proven_absent", detail };
    if (!(await settleIfUnresolved(tx, delivery.id, outcome, now))) return false;
    await tx.insert(settlements).values({
      deliveryId: delivery.id,
      disposition: ReceiptState.NotSent,
      settledBy: "reconcile",
      conversationId,
      evidence: { previousState: delivery.state, ...proof },
      at: now,
    });
    await settleCall(tx, delivery.id, CallState.Settled, body, now);
    await resolveFence(tx, delivery.id, ReceiptState.NotSent, now);
    return true;
  });
  return settled ? body : undefined;
}
