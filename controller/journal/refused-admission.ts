/**
 * A message_seat call (a delivery, or a question's answer) refused because its admission got no
 * answer (ADR 0033): the lead was told nothing was sent and nothing will be for this id. The admission statement may still
 * commit whenever the database answers, also after this controller has died, and boot recovery
 * would then have marked it uncertain. So the refusal is written by id, and holds in either
 * order:
 * - before the admission: the call receipt is inserted settled, with the refusal's body, and
 *   the admission (its insert is `on conflict do nothing`, and the delivery receipt and the
 *   lease follow from it) writes nothing;
 * - after it: the call receipt still in flight and its delivery receipt still dispatching (a
 *   question's answer has none) are settled not sent, and its seat lease is released; a hire's
 *   reservation still reserved (never launched) is settled failed.
 * Two statements in one transaction, because in READ COMMITTED the second takes a new snapshot:
 * an admission the first waited for (same id, not yet committed) is visible to the second. Each
 * touches only what this controller's own refused attempt wrote (its instance, the call's
 * conversation and fingerprint); a replay of an id admitted here and still in flight records no
 * refusal at all (delivery/admit.ts), since it inserted nothing of its own. A call a peer took
 * over (this instance's lease expired, ADR 0036) is uncertain, no longer in flight: the refusal leaves it.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { CallState } from "./call-receipts.js";

export interface RefusedAdmission {
  kind: "refused_admission";
  id: string;
  tool: string;
  conversationId: string;
  /** The call's fingerprint, so a replay of the id with other arguments is still told apart. */
  fingerprint: string;
  controllerInstance: string;
  /** The epoch the admission was tried under (absent in a spill file written before epochs). */
  controllerEpoch?: number | undefined;
  body: Record<string, unknown>;
  reason: string;
  detail: string;
  /** The lease the admission would have taken (`instance:deliveryId`); null for a call that takes none (a question answer, a hire). */
  holder: string | null;
  /** A hire's refusal: its reservation, if the admission committed one, goes from `from` (never launched) to `to`. */
  hireReceipt?: { from: string; to: string } | undefined;
  now: Date;
}

export async function recordRefusedAdmission(db: Db, r: RefusedAdmission): Promise<void> {
  const now = new Date(r.now).toISOString();
  const body = JSON.stringify(r.body);
  await db.transaction(async (tx) => {
    await tx.execute(sql`
      insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, controller_instance, controller_epoch, result, settled_at)
      values (${r.id}, ${r.tool}, ${r.conversationId}, ${r.fingerprint}, ${CallState.Settled}, ${r.controllerInstance}, ${r.controllerEpoch ?? null}::bigint, ${body}::jsonb, ${now}::timestamptz)
      on conflict (id) do update set state = excluded.state, result = excluded.result, settled_at = excluded.settled_at
      where operator_call_receipts.state = ${CallState.InFlight} and operator_call_receipts.controller_instance = excluded.controller_instance
        and operator_call_receipts.conversation_id = excluded.conversation_id and operator_call_receipts.fingerprint = excluded.fingerprint`);
    // Only the receipt this controller's refused attempt admitted: its call receipt is this instance's, and settled by the refusal now.
    await tx.execute(sql`
      update delivery_receipts d set state = ${ReceiptState.NotSent}, reason = ${r.reason}, detail = ${r.detail}, settled_at = ${now}::timestamptz
      where d.id = ${r.id} and d.state = ${ReceiptState.Dispatching}
        and exists (select 1 from operator_call_receipts c where c.id = d.id and c.controller_instance = ${r.controllerInstance} and c.result->>'reason' = ${r.reason} and c.state = ${CallState.Settled})`);
    if (r.holder !== null) {
      // Its place in the seat's line too (ADR 0039): nothing will ever wait there for it.
      await tx.execute(sql`delete from seat_waiters where holder = ${r.holder}`);
      await tx.execute(sql`
        delete from seat_turns where holder = ${r.holder}
          and exists (select 1 from operator_call_receipts c where c.id = ${r.id} and c.controller_instance = ${r.controllerInstance} and c.result->>'reason' = ${r.reason} and c.state = ${CallState.Settled})`);
    }
    if (r.hireReceipt) {
      // Only a reservation never launched: the launching write applies only from reserved, so none can follow this.
      await tx.execute(sql`
        update hire_receipts h set state = ${r.hireReceipt.to}, reason = ${r.reason}, updated_at = ${now}::timestamptz, settled_at = ${now}::timestamptz
        where h.id = ${r.id} and h.state = ${r.hireReceipt.from}
          and exists (select 1 from operator_call_receipts c where c.id = h.id and c.controller_instance = ${r.controllerInstance} and c.result->>'reason' = ${r.reason} and c.state = ${CallState.Settled})`);
    }
  });
}

export function isRefusedAdmission(p: object): p is RefusedAdmission {
  return "kind" in p && p.kind === "refused_admission";
}
