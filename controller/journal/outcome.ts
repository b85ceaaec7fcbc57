/**
 * The settle of one dispatched delivery in ONE statement, one commit (ADR 0013): the call
 * receipt and its lead-facing body, the delivery receipt's outcome, the fence an unresolved
 * outcome leaves, the `previous` originals it reported, and the seat's lease — released, or
 * handed to the next delivery this controller has waiting for the seat. The next delivery
 * can only take the turn once this outcome (and its fence) is visible.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { isUnresolved } from "../../shared/verdicts.js";
import type { DeliveryOutcome } from "./delivery-receipts.js";
import { CallState } from "./call-receipts.js";
import { json, p, statement, ts } from "./statements.js";

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
  /** The lease this delivery holds, if any. */
  holder: string | null;
  /** Hand the lease to this holder instead of deleting it (a local delivery waits for the seat). */
  nextHolder: string | null;
  leaseSeconds: number;
  now: Date;
}

const settleStatement = statement<Record<string, unknown>>("settle", () => sql`
with call as (
  update operator_call_receipts set state = ${p("callState")}::text, result = ${p("body")}::text::jsonb, settled_at = ${p("callSettledAt")}::timestamptz
  where id = ${p("id")}::text returning id
),
receipt as (
  update delivery_receipts set state = ${p("state")}::text, reason = ${p("reason")}::text, detail = ${p("detail")}::text,
    native_receipt_id = ${p("nativeReceiptId")}::text, native_message_id = ${p("nativeMessageId")}::text, native_session_path = ${p("nativeSessionPath")}::text, proof_age_ms = ${p("proofAgeMs")}::int, proofs = ${p("proofs")}::text::jsonb,
    settled_at = ${p("receiptSettledAt")}::timestamptz
  where id = ${p("id")}::text returning id
),
fence as (
  insert into fences (delivery_id, seat_id, content_fingerprint, conversation_id, opened_at)
  select id, ${p("seatId")}::text, ${p("contentFingerprint")}::text, ${p("conversationId")}::text, ${p("now")}::timestamptz from receipt where ${p("openFence")}::boolean
  on conflict do nothing returning delivery_id
),
reported as (
  update fences set previous_reported_at = ${p("now")}::timestamptz
  where delivery_id in (select jsonb_array_elements_text(${p("previousIds")}::text::jsonb)) returning delivery_id
),
released as (
  delete from seat_turns where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${p("nextHolder")}::text is null returning seat_id
),
handed as (
  update seat_turns set holder = ${p("nextHolder")}::text, expires_at = now() + make_interval(secs => ${p("leaseSeconds")}::float8)
  where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text and ${p("nextHolder")}::text is not null returning seat_id
)
select (select count(*) from call)::int as calls, (select count(*) from receipt)::int as receipts,
  (select count(*) from released)::int + (select count(*) from handed)::int as lease_moved,
  (select count(*) from handed)::int as handed
`);

/** Returns whether the lease went to `nextHolder` (false: released, or it was not ours any more). */
export async function settleDispatched(db: Db, s: SettleParams): Promise<{ handed: boolean }> {
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
    nextHolder: s.nextHolder,
    leaseSeconds: s.leaseSeconds,
  });
  if (!row || Number(row.calls) !== 1) throw new Error(`the call receipt ${s.id} was not found to settle`);
  return { handed: Number(row.handed) === 1 };
}
