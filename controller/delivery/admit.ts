/**
 * message_seat, step one: admission. One statement before any effect (ADR 0013): the operator call
 * receipt (a repeated id returns the original and never dispatches again), the delivery receipt in
 * "dispatching" and, when the seat is free, its lease. Calls of one conversation are admitted one after
 * another, so deliveries to a seat take their turns (turn.ts) in the order the controller received them.
 * Here too the refusal of an admission the journal did not answer, recorded even if the admission commits
 * late; a repeated id is answered by replay.ts.
 */
import { CallState } from "../journal/call-receipts.js";
import type { MessageSeatBody } from "./result-bodies.js";
import { admittedHere } from "./replay.js";
import {
  type Admitted,
  type SeatTurn,
  UNATTENDED_RELEASE_AFTER_MS,
  UNRESOLVED,
  seatSnapshotOf,
} from "./receipt-types.js";
import type { RefusedAdmission } from "../journal/refused-admission.js";
import { MESSAGE_SEAT, leaseMsOf, type MessageSeatInput, type PipelineDeps } from "./pipeline.js";
import { contentFingerprint } from "../../shared/fingerprint.js";
import type { DeliveryMode } from "../../shared/verdicts.js";
import { commitUnknown, journalFailure } from "../db/error-text.js";
import { JournalNoAnswerError } from "../db/answer-deadline.js";
import { ABANDONED_CONTENT_FENCE_MS } from "../journal/fences.js";
import { lineIsEmpty } from "./turn-statements.js";
import { sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { asBool, p, statement, ts, type Row } from "../journal/statements.js";
import { FencedWriteError, isFencedWrite, leaseHeldGuard, type InstanceEpoch } from "../journal/instances.js";
import { leaseLostRefusal } from "../fleet/instance-lease.js";

/**
 * Calls of one conversation are admitted one after another, in the order they reached the
 * controller: each admission statement starts after the previous one committed and entered
 * its seat's turn, so the seat serves them in that order (rule 25). Other conversations are
 * not held up; the chain holds no connection while it waits.
 */
export class AdmissionOrder {
  private readonly tails = new Map<string, Promise<unknown>>();

  admit<T>(conversationId: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(conversationId);
    const run = before ? before.then(fn, fn) : fn();
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(conversationId, tail);
    void tail.then(() => {
      if (this.tails.get(conversationId) === tail) this.tails.delete(conversationId);
    });
    return run;
  }
}

/**
 * A message_seat admission the journal did not answer in time (controller/db/answer-deadline.ts:
 * a stopped or unreachable database). Its call is refused, and nothing was or will be dispatched
 * for it; but the admission statement may still commit whenever the database answers, and left
 * alone its receipt would sit "dispatching", fencing its text, with its seat held until the
 * lease expired — or, had this controller died first, boot recovery would have marked it
 * uncertain though its lead was told not sent. So the refusal itself is recorded by id
 * (journal/refused-admission.ts), in either order with the admission, through the unrecorded
 * outcomes: on disk before the lead hears it, retried until the journal takes it, and recorded
 * by the next boot before recovery if this process dies first. A late result hurries it along.
 */
export interface UnansweredAdmission {
  id: string;
  conversationId: string;
  fingerprint: string;
  seatRef: string;
  holder: string;
  /** The epoch the admission was tried under. */
  epoch: number;
}

export const UNANSWERED_DETAIL =
  "the receipt journal did not answer this call's admission in time, so it was refused; nothing was dispatched, and nothing will be for this id";

/** Keeps the refusal until the journal has it; call before the lead is answered. */
export function recordUnansweredRefusal(deps: PipelineDeps, call: UnansweredAdmission): void {
  const body: MessageSeatBody = {
    schemaVersion: 1,
    deliveryId: call.id,
    seat: call.seatRef,
    outcome: "undelivered",
    deliveryStage: "unavailable",
    reason: "journal_unavailable",
    detail: UNANSWERED_DETAIL,
  };
  const refusal: RefusedAdmission = {
    kind: "refused_admission",
    id: call.id,
    tool: MESSAGE_SEAT,
    conversationId: call.conversationId,
    fingerprint: call.fingerprint,
    controllerInstance: deps.instanceId,
    controllerEpoch: call.epoch,
    body: body as unknown as Record<string, unknown>,
    reason: "journal_unavailable",
    detail: UNANSWERED_DETAIL,
    holder: call.holder,
    now: deps.now(),
  };
  deps.unrecorded.add(`refused admission ${call.id} (not_sent)`, refusal);
}

/** The refused admission's result came after all: the database answers again, so record the refusal now. */
export function onLateAdmission(deps: PipelineDeps, call: { id: string }, admitted: Admitted): void {
  if (admitted.inserted)
    deps.logger.warn("an admission committed after its call was refused; settling it not sent", {
      deliveryId: call.id,
      tool: MESSAGE_SEAT,
    });
  void deps.unrecorded.flush().then(() => deps.onJournalChange());
}

/**
 * Admission of one message_seat call in ONE statement, one commit (ADR 0013): the operator
 * call receipt, the delivery receipt in "dispatching" (with the occupant it is admitted for, rule
 * 30) and the seat's turn lease (when the seat is free and its line empty) or its place in the
 * seat's fleet-wide line (ADR 0039) are inserted,
 * and the seat with its machine, the content fence, whether a stale fence waits for the
 * unattended release and the settled originals still to report as `previous` are read.
 * Nothing reaches an agent before this commit. A repeated id inserts nothing (cold path:
 * `existingCall`); an unknown seat inserts only the call receipt, settled by the caller.
 */
export interface AdmitParams {
  id: string;
  tool: string;
  conversationId: string;
  fingerprint: string;
  controllerInstance: string;
  /** The admitting instance's epoch: the statement inserts nothing unless its lease is live (ADR 0036). */
  controllerEpoch: number;
  seatRef: string;
  contentFingerprint: string;
  mode: string;
  inReplyTo: string | null;
  /** The lease holder this delivery would be: `instance:deliveryId`. */
  holder: string;
  leaseSeconds: number;
  /** How long its place in the seat's line lasts (the 25 s rule, ADR 0039). */
  turnWaitSeconds: number;
  /** Abandoned originals settled after this still refuse their exact content. */
  abandonedSince: Date;
  /** Open fences opened before this are due for the unattended release. */
  staleBefore: Date;
}

/**
 * The statement for a seat named by its id ("machine/name", the seats' unique key) or by a bare name
 * (one seat, or several on different machines). Names hold no "/", so a ref is one or the other. Apart,
 * the planner's generic plan for an id is exact: with `id = $1 or name = $1` in one statement, a fleet whose
 * machines share seat names (10 names on 1,000 machines) made it plan every admission anew (+1 ms at
 * 1,000 agents), and the generic plan it then weighed took a second.
 */
export const admissionSql = (by: "id" | "name") => sql`
with seat as (
  select s.id, s.name, s.occupant_id, m.name as m_name, m.endpoint as m_endpoint, m.agent_token as m_agent_token
  from seats s left join machines m on m.name = s.machine
  where s.present and ${by === "id" ? sql`s.id` : sql`s.name`} = ${p("seatRef")}::text
),
one as (select * from seat where (select count(*) from seat) = 1),

call as (
  insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, controller_instance, controller_epoch)
  select ${p("id")}::text, ${p("tool")}::text, ${p("conversationId")}::text, ${p("fingerprint")}::text, ${sql.raw(`'${CallState.InFlight}'`)}, ${p("instance")}::text, ${p("epoch")}::bigint
  where ${leaseHeldGuard()}
  on conflict do nothing
  returning id
),
turn_lock as (
  select one.id as seat_id, clock_timestamp() as at
  from call, one, lateral pg_advisory_xact_lock(hashtextextended('clankie_seat_turn:' || one.id, 0)) l where one.m_name is not null
),
receipt as (
  insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state, in_reply_to, occupant_id, created_at)
  select call.id, ${p("conversationId")}::text, one.id, ${p("contentFingerprint")}::text, ${p("mode")}::text, ${sql.raw(`'${ReceiptState.Dispatching}'`)}, ${p("inReplyTo")}::text, one.occupant_id, turn_lock.at
  from call, one, turn_lock where one.m_name is not null
  returning seat_id
),
lease as (
  insert into seat_turns (seat_id, holder, expires_at)
  select seat_id, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8) from receipt where ${lineIsEmpty(sql`receipt.seat_id`)}
  on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at where seat_turns.expires_at < now()
  returning holder
),
queued as (
  insert into seat_waiters (holder, seat_id, admitted_at, expires_at)
  select ${p("holder")}::text, receipt.seat_id, turn_lock.at, now() + make_interval(secs => ${p("turnWaitSeconds")}::float8) from receipt, turn_lock where not exists (select 1 from lease)
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
  ${leaseHeldGuard()} as live,
  (select count(*) from seat)::int as seats,
  one.id as seat_id, one.name as seat_name, one.occupant_id, one.m_name, one.m_endpoint, one.m_agent_token,
  (select count(*) from lease)::int as lease_taken,
  (select id from original) as original_id,
  (select state from original) as original_state,
  exists (select 1 from fences f where f.seat_id = one.id and f.resolved_at is null and f.opened_at < ${p("staleBefore")}::timestamptz) as stale_fence,
  (select coalesce(jsonb_agg(jsonb_build_object('deliveryId', f.delivery_id, 'state', coalesce(f.disposition, 'settled')) order by f.resolved_at desc), '[]'::jsonb)::text
     from fences f where f.seat_id = one.id and f.conversation_id = ${p("conversationId")}::text and f.resolved_at is not null and f.previous_reported_at is null) as previous
from (select 1) x left join one on true
`;
const admitStatement = (by: "id" | "name") =>
  statement<Record<string, unknown>>(by === "id" ? "admit" : "admit_by_name", () => admissionSql(by));
const admitById = admitStatement("id");
const admitByName = admitStatement("name");

/*
 * `turn_lock` (issue 34 item 3): admissions to one seat take a transaction lock on the seat, once their call
 * receipt is written, and read the clock once they hold it. Their admission time (the receipt's created_at and the place in the seat's
 * line) is then in the order they commit, which is the order the line and the settle's hand-off see them:
 * with the statement's start time (now()) an admission that started earlier but committed later was
 * passed over by a hand-off that could not see it yet, or lost the free seat to a later one (bench:ha
 * counted 2 skipped turns of 200). Only admissions to the same seat wait for each other, for one commit.
 */

/**
 * `late`: the admission's result when it comes after the answer deadline (the statement may
 * still commit once a frozen database answers), so the caller can settle what it already refused.
 */
export async function admitDelivery(db: Db, a: AdmitParams, late?: (admitted: Admitted) => void): Promise<Admitted> {
  const rows = await (a.seatRef.includes("/") ? admitById : admitByName)(db).run(
    {
      id: a.id,
      tool: a.tool,
      conversationId: a.conversationId,
      fingerprint: a.fingerprint,
      instance: a.controllerInstance,
      epoch: a.controllerEpoch,
      seatRef: a.seatRef,
      contentFingerprint: a.contentFingerprint,
      mode: a.mode,
      inReplyTo: a.inReplyTo,
      holder: a.holder,
      leaseSeconds: a.leaseSeconds,
      turnWaitSeconds: a.turnWaitSeconds,
      abandonedSince: ts(a.abandonedSince),
      staleBefore: ts(a.staleBefore),
    },
    late && ((rows) => rows[0] && late(admittedOf(rows[0]))),
  );
  if (!rows[0]) throw new Error("the admission statement returned no row");
  if (!asBool(rows[0].live))
    throw new FencedWriteError(
      { instance: a.controllerInstance, epoch: a.controllerEpoch },
      `the admission of ${a.id}`,
    );
  return admittedOf(rows[0]);
}

function admittedOf(r: Row): Admitted {
  return {
    ...seatSnapshotOf(r),
    inserted: Number(r.inserted) === 1,
    seatsMatched: Number(r.seats),
    leaseTaken: Number(r.lease_taken) === 1,
  };
}

/** One message_seat call as the admission takes it, after the edge's checks. */
export interface AdmissionCall {
  id: string;
  conversationId: string;
  fingerprint: string;
  input: MessageSeatInput;
  mode: DeliveryMode;
  holder: string;
}

const order = new WeakMap<PipelineDeps, AdmissionOrder>();

/**
 * Runs the admission statement in the conversation's order and, for a dispatchable delivery, enters
 * the seat's turn before the next admission. A journal that does not answer gets the refusal recorded.
 */
export async function admitInOrder(
  deps: PipelineDeps,
  call: AdmissionCall,
): Promise<{ admitted: Admitted; entered: Promise<SeatTurn> | undefined; fence: InstanceEpoch }> {
  const { id, conversationId, fingerprint, input, mode, holder } = call;
  let queue = order.get(deps);
  if (!queue) order.set(deps, (queue = new AdmissionOrder()));

  // Admitted in arrival order per conversation; the seat's turn is entered in the same order.
  return queue.admit(conversationId, async () => {
    const now = deps.now();
    let a: Admitted;
    const fence = deps.lease.fence();
    try {
      a = await admitDelivery(
        deps.db,
        {
          id,
          tool: MESSAGE_SEAT,
          conversationId: conversationId,
          fingerprint,
          controllerInstance: fence.instance,
          controllerEpoch: fence.epoch,
          seatRef: input.seat,
          contentFingerprint: contentFingerprint(input.message),
          mode,
          inReplyTo: input.inReplyTo ?? null,
          holder,
          leaseSeconds: leaseMsOf(deps.deliverTimeoutMs) / 1000,
          turnWaitSeconds: deps.seatTurnWaitMs / 1000,
          abandonedSince: new Date(now.getTime() - ABANDONED_CONTENT_FENCE_MS),
          staleBefore: new Date(now.getTime() - UNATTENDED_RELEASE_AFTER_MS),
        },
        (late) => onLateAdmission(deps, { id }, late),
      );
    } catch (e) {
      // A lost lease refuses the admission inside its own statement: nothing was written or sent.
      if (isFencedWrite(e)) throw leaseLostRefusal("admitted or sent");
      deps.logger.warn("journal admission failed", {
        deliveryId: id,
        error: (e as Error).message,
        cause: String((e as { cause?: unknown }).cause ?? ""),
      });
      // Issue 34 item 5: a connection lost mid-admission (a primary killed or failed over) is as
      // ambiguous as no answer: the commit may have happened and only its answer was lost.
      if (e instanceof JournalNoAnswerError || commitUnknown(e)) {
        // Recorded (on disk first) before the lead hears it: the admission may still commit later.
        // Not for a replay of an id admitted here and still in flight: it inserted nothing of its own.
        if (!admittedHere(deps).has(id))
          recordUnansweredRefusal(deps, {
            id,
            conversationId: conversationId,
            fingerprint,
            seatRef: input.seat,
            holder,
            epoch: fence.epoch,
          });
        throw journalFailure(
          e,
          "the receipt journal did not answer, so nothing was dispatched, and nothing will be for this id",
        );
      }
      throw journalFailure(e, "the receipt journal could not be written, so nothing was dispatched");
    }
    if (a.inserted) admittedHere(deps).add(id);
    // Entering the turn here, before the next admission of this conversation, keeps the order.
    const dispatchable = a.inserted && a.seatsMatched === 1 && a.seat?.machine;
    const entered = dispatchable
      ? deps.turns.enter(
          a.seat!.id,
          holder,
          a.leaseTaken ? "lease" : "queued",
          deps.seatTurnWaitMs,
          deps.shutdownSignal,
        )
      : undefined;
    return { admitted: a, entered, fence };
  });
}
