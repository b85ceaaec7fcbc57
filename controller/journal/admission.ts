/**
 * Admission of one message_seat call in ONE statement, one commit (ADR 0013): the operator
 * call receipt, the delivery receipt in "dispatching" (with the occupant it is admitted for, rule
 * 30) and the seat's turn lease are inserted,
 * and the seat with its machine, the content fence, whether a stale fence waits for the
 * unattended release and the settled originals still to report as `previous` are read.
 * Nothing reaches an agent before this commit. A repeated id inserts nothing (cold path:
 * `existingCall`); an unknown seat inserts only the call receipt, settled by the caller.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { CallState } from "./call-receipts.js";
import { p, statement, ts, type Row } from "./statements.js";

export interface AdmitParams {
  id: string;
  tool: string;
  conversationId: string;
  fingerprint: string;
  controllerInstance: string;
  seatRef: string;
  contentFingerprint: string;
  mode: string;
  inReplyTo: string | null;
  /** The lease holder this delivery would be: `instance:deliveryId`. */
  holder: string;
  leaseSeconds: number;
  /** Abandoned originals settled after this still refuse their exact content. */
  abandonedSince: Date;
  /** Open fences opened before this are due for the unattended release. */
  staleBefore: Date;
}

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

const UNRESOLVED = sql.raw(`'${ReceiptState.Dispatching}', '${ReceiptState.Unconfirmed}', '${ReceiptState.Uncertain}'`);

const admitStatement = statement<Record<string, unknown>>("admit", () => sql`
with seat as (
  select s.id, s.name, s.occupant_id, m.name as m_name, m.endpoint as m_endpoint, m.agent_token as m_agent_token
  from seats s left join machines m on m.name = s.machine
  where s.present and (s.id = ${p("seatRef")}::text or s.name = ${p("seatRef")}::text)
),
one as (select * from seat where (select count(*) from seat) = 1),
call as (
  insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, controller_instance)
  values (${p("id")}::text, ${p("tool")}::text, ${p("conversationId")}::text, ${p("fingerprint")}::text, ${sql.raw(`'${CallState.InFlight}'`)}, ${p("instance")}::text)
  on conflict do nothing
  returning id
),
receipt as (
  insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state, in_reply_to, occupant_id)
  select call.id, ${p("conversationId")}::text, one.id, ${p("contentFingerprint")}::text, ${p("mode")}::text, ${sql.raw(`'${ReceiptState.Dispatching}'`)}, ${p("inReplyTo")}::text, one.occupant_id
  from call, one where one.m_name is not null
  returning seat_id
),
lease as (
  insert into seat_turns (seat_id, holder, expires_at)
  select seat_id, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8) from receipt
  on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at where seat_turns.expires_at < now()
  returning holder
),
original as (
  select d.id, d.state from delivery_receipts d, one
  where d.seat_id = one.id and d.content_fingerprint = ${p("contentFingerprint")}::text and d.id <> ${p("id")}::text
    and (d.state in (${UNRESOLVED}) or (d.state = ${sql.raw(`'${ReceiptState.AbandonedUnknown}'`)} and d.settled_at > ${p("abandonedSince")}::timestamptz))
  order by d.created_at limit 1
)
select
  (select count(*) from call)::int as inserted,
  (select count(*) from seat)::int as seats,
  one.id as seat_id, one.name as seat_name, one.occupant_id, one.m_name, one.m_endpoint, one.m_agent_token,
  (select count(*) from lease)::int as lease_taken,
  (select id from original) as original_id,
  (select state from original) as original_state,
  exists (select 1 from fences f where f.seat_id = one.id and f.resolved_at is null and f.opened_at < ${p("staleBefore")}::timestamptz) as stale_fence,
  (select coalesce(jsonb_agg(jsonb_build_object('deliveryId', f.delivery_id, 'state', coalesce(f.disposition, 'settled')) order by f.resolved_at desc), '[]'::jsonb)::text
     from fences f where f.seat_id = one.id and f.conversation_id = ${p("conversationId")}::text and f.resolved_at is not null and f.previous_reported_at is null) as previous
from (select 1) x left join one on true
`);

/**
 * `late`: the admission's result when it comes after the answer deadline (the statement may
 * still commit once a frozen database answers), so the caller can settle what it already refused.
 */
export async function admitDelivery(db: Db, a: AdmitParams, late?: (admitted: Admitted) => void): Promise<Admitted> {
  const rows = await admitStatement(db).run({
    id: a.id,
    tool: a.tool,
    conversationId: a.conversationId,
    fingerprint: a.fingerprint,
    instance: a.controllerInstance,
    seatRef: a.seatRef,
    contentFingerprint: a.contentFingerprint,
    mode: a.mode,
    inReplyTo: a.inReplyTo,
    holder: a.holder,
    leaseSeconds: a.leaseSeconds,
    abandonedSince: ts(a.abandonedSince),
    staleBefore: ts(a.staleBefore),
  }, late && ((rows) => rows[0] && late(admittedOf(rows[0]))));
  if (!rows[0]) throw new Error("the admission statement returned no row");
  return admittedOf(rows[0]);
}

function admittedOf(r: Row): Admitted {
  const seat: AdmittedSeat | undefined = r.seat_id
    ? {
        id: String(r.seat_id),
        name: String(r.seat_name),
        occupantId: String(r.occupant_id),
        machine: r.m_name ? { name: String(r.m_name), endpoint: String(r.m_endpoint), agentToken: String(r.m_agent_token) } : null,
      }
    : undefined;
  return {
    inserted: Number(r.inserted) === 1,
    seatsMatched: Number(r.seats),
    seat,
    leaseTaken: Number(r.lease_taken) === 1,
    original: r.original_id ? { id: String(r.original_id), state: String(r.original_state) } : undefined,
    staleFence: r.stale_fence === true || r.stale_fence === "t",
    previous: JSON.parse(String(r.previous ?? "[]")) as { deliveryId: string; state: string }[],
  };
}

/**
 * The in-turn recheck for a delivery that did not take the lease at admission (the seat was
 * busy) or that must look again after the unattended release: the seat and its machine, the
 * content fence and `previous`, as of now, in one read-only statement.
 */
const recheckStatement = statement<Record<string, unknown>>("recheck", () => sql`
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
`);

export interface Recheck {
  seat: (AdmittedSeat & { present: boolean }) | undefined;
  original: { id: string; state: string } | undefined;
  staleFence: boolean;
  previous: { deliveryId: string; state: string }[];
}

export async function recheckDelivery(db: Db, r: { id: string; seatId: string; conversationId: string; contentFingerprint: string; abandonedSince: Date; staleBefore: Date }): Promise<Recheck> {
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
        machine: row.m_name ? { name: String(row.m_name), endpoint: String(row.m_endpoint), agentToken: String(row.m_agent_token) } : null,
      }
    : undefined;
  return {
    seat,
    original: row?.original_id ? { id: String(row.original_id), state: String(row.original_state) } : undefined,
    staleFence: row?.stale_fence === true || row?.stale_fence === "t",
    previous: JSON.parse(String(row?.previous ?? "[]")) as { deliveryId: string; state: string }[],
  };
}
