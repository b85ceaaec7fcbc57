/**
 * The dispatch's one statement: the in-turn recheck of a delivery that waited for its seat (or
 * that looks again after the unattended release), read-only, beside dispatch.ts as
 * turn-statements.ts is beside turn.ts.
 */
import { sql } from "drizzle-orm";
import { ReceiptState } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { p, statement, ts } from "../journal/statements.js";
import { UNRESOLVED, type AdmittedSeat } from "./receipt-types.js";

/**
 * The in-turn recheck for a delivery that did not take the lease at admission (the seat was
 * busy) or that must look again after the unattended release: the seat and its machine, the
 * content fence and `previous`, as of now, in one read-only statement.
 */
const recheckStatement = statement<Record<string, unknown>>(
  "recheck",
  () => sql`
with one as (
  select s.id, s.name, s.occupant_id, s.present, m.name as m_name, m.endpoint as m_endpoint, m.agent_token as m_agent_token
  from seats s left join machines m on m.name = s.machine where s.id = ${p("seatId")}::text
),
original as (
  select d.id, d.state from delivery_receipts d
  where d.seat_id = ${p("seatId")}::text and d.content_fingerprint = ${p("contentFingerprint")}::text and d.id <> ${p("id")}::text
    and (d.state in (${UNRESOLVED}) or (d.state = ${sql.raw(`'${ReceiptState.AbandonedUnknown}'`)} and d.settled_at > ${p("abandonedSince")}::timestamptz))
  order by d.created_at limit 1
)
select one.id as seat_id, one.name as seat_name, one.occupant_id, one.present, one.m_name, one.m_endpoint, one.m_agent_token,
  (select id from original) as original_id, (select state from original) as original_state,
  exists (select 1 from fences f where f.seat_id = ${p("seatId")}::text and f.resolved_at is null and f.opened_at < ${p("staleBefore")}::timestamptz) as stale_fence,
  (select coalesce(jsonb_agg(jsonb_build_object('deliveryId', f.delivery_id, 'state', coalesce(f.disposition, 'settled')) order by f.resolved_at desc), '[]'::jsonb)::text
     from fences f where f.seat_id = ${p("seatId")}::text and f.conversation_id = ${p("conversationId")}::text and f.resolved_at is not null and f.previous_reported_at is null) as previous
from (select 1) x left join one on true
`,
);

export interface Recheck {
  seat: (AdmittedSeat & { present: boolean }) | undefined;
  original: { id: string; state: string } | undefined;
  staleFence: boolean;
  previous: { deliveryId: string; state: string }[];
}

export async function recheckDelivery(
  db: Db,
  r: {
    id: string;
    seatId: string;
    conversationId: string;
    contentFingerprint: string;
    abandonedSince: Date;
    staleBefore: Date;
  },
): Promise<Recheck> {
  const [row] = await recheckStatement(db).run({
    id: r.id,
    seatId: r.seatId,
    conversationId: r.conversationId,
    contentFingerprint: r.contentFingerprint,
    abandonedSince: ts(r.abandonedSince),
    staleBefore: ts(r.staleBefore),
  });
  const seat = row?.seat_id
    ? {
        id: String(row.seat_id),
        name: String(row.seat_name),
        occupantId: String(row.occupant_id),
        present: row.present === true || row.present === "t",
        machine: row.m_name
          ? { name: String(row.m_name), endpoint: String(row.m_endpoint), agentToken: String(row.m_agent_token) }
          : null,
      }
    : undefined;
  return {
    seat,
    original: row?.original_id ? { id: String(row.original_id), state: String(row.original_state) } : undefined,
    staleFence: row?.stale_fence === true || row?.stale_fence === "t",
    previous: JSON.parse(String(row?.previous ?? "[]")) as { deliveryId: string; state: string }[],
  };
}
