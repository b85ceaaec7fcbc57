/**
 * message_seat, step three, inside the seat's turn (turn.ts): recheck the seat when it was busy (the
 * recheck statement), release stale fences unattended, refuse a resend of an unresolved original's
 * content, make the one Deliver call, read the agent's verdict (verdict.ts), and settle in one statement
 * (settle.ts). The phase the dispatch reached decides a failure's meaning: before `calling_agent` nothing
 * can have been sent (a definite not-sent); during it, a lost answer is uncertain and is never retried.
 */
import { create } from "@bufbuild/protobuf";
import { sql } from "drizzle-orm";
import {
  AuthoritySchema,
  DeliverRequestSchema,
  type DeliverResponse,
} from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { contentFingerprint } from "../../shared/fingerprint.js";
import { type AgentCallError, agentCallError } from "../../shared/errors.js";
import { EPOCH_FENCED, ReceiptState, deliveryModeWire, type DeliveryMode } from "../../shared/verdicts.js";
import type { ControllerReason, DeliveryStage } from "../../shared/delivery-bodies.js";
import { journalCause } from "../db/error-text.js";
import { MachineOfflineError } from "../nodes/liveness.js";
import { ABANDONED_CONTENT_FENCE_MS, openFencesOlderThan } from "../journal/fences.js";
import { findDelivery } from "../journal/delivery-receipts.js";
import type { InstanceEpoch } from "../journal/instances.js";
import { asBool, p, statement, ts } from "../journal/statements.js";
import {
  UNATTENDED_RELEASE_AFTER_MS,
  UNRESOLVED,
  seatSnapshotOf,
  type Admitted as AdmittedRow,
  type BodyBase,
  type DispatchRecord,
  type SeatSnapshot,
  type SeatTurn,
} from "./receipt-types.js";
import { idleReleases } from "./idle-release.js";
import type { MessageSeatInput, PipelineDeps, SenderRecheck } from "./pipeline.js";
import type { MessageSeatBody, ToolOutcome } from "./result-bodies.js";
import { settleAbandoned, settleDispatch, settleFoundInSession, settleUncertain } from "./settle.js";
import { sessionEvidence } from "./session-evidence.js";
import { withSeatTurn } from "./turn.js";
import { readVerdict } from "./verdict.js";

export interface Admitted {
  conversationId: string;
  id: string;
  mode: DeliveryMode;
  input: MessageSeatInput;
  admitted: AdmittedRow;
  holder: string;
  /** The seat's turn, entered at admission in admission order. */
  entered: Promise<SeatTurn>;
  /** A peer message's sender authority, re-read just before the agent call (rule 26). */
  senderRecheck?: SenderRecheck | undefined;
  /** The (instance, epoch) the call was admitted under: the send and the settle happen under it or not at all. */
  fence: InstanceEpoch;
}

/**
 * How far one dispatch got. Everything before `calling_agent` happens before the request
 * exists, so a failure there is a definite not-sent; `calling_agent` is the only uncertain
 * window; `answered` carries the agent's own verdict.
 */
export type Phase = "waiting_turn" | "checking" | "calling_agent" | "answered";

/** One dispatch under way: what its settle records, the body every answer starts with, and how far it got. */
interface Dispatch {
  deps: PipelineDeps;
  a: Admitted;
  d: DispatchRecord;
  base: BodyBase;
  phase: Phase;
  turn?: SeatTurn;
}

export async function dispatchInTurn(deps: PipelineDeps, a: Admitted): Promise<ToolOutcome> {
  const seatId = a.admitted.seat!.id;
  const x: Dispatch = {
    deps,
    a,
    d: { id: a.id, conversationId: a.conversationId, seatId, message: a.input.message, fence: a.fence },
    base: { schemaVersion: 1, deliveryId: a.id, seat: seatId },
    phase: "waiting_turn",
  };
  try {
    return await withSeatTurn(deps.turns, a.entered, (turn) => {
      x.turn = turn;
      return run(x);
    });
  } catch (e) {
    if (x.phase === "calling_agent" || x.phase === "answered") throw e;
    // Before the request existed: definite, even if it cannot be recorded yet.
    deps.logger.warn("journal failed before dispatch", { deliveryId: a.id, error: (e as Error).message });
    return notSent(
      x,
      "journal_unavailable",
      `the receipt journal failed after this receipt was committed and before anything was sent (${journalCause(e)})`,
    );
  }
}

/** Settles a definite not-sent; `more` adds to (or overrides in) the body, as a fence refusal's original. */
function notSent(
  x: Dispatch,
  reason: ControllerReason,
  detail: string,
  stage: DeliveryStage = "unavailable",
  more: Partial<MessageSeatBody> = {},
): Promise<ToolOutcome> {
  const body: MessageSeatBody = { ...x.base, outcome: "undelivered", deliveryStage: stage, reason, detail, ...more };
  return settleDispatch(x.deps, x.d, x.turn, body, { state: ReceiptState.NotSent, reason, detail });
}

const STOPPING = "the controller stopped before this message reached the agent; nothing was sent";

async function run(x: Dispatch): Promise<ToolOutcome> {
  const { deps, a } = x;
  await deps.hooks?.faults?.at("hang_after_admit");
  x.phase = "checking";
  if (deps.shutdownSignal.aborted) return notSent(x, "service_stopping", STOPPING);

  let seat = a.admitted.seat!;
  let { original, previous, staleFence } = a.admitted;
  // Read at admission under the lease, these are current; otherwise (the seat was busy, or the
  // admission's snapshot predates another delivery's settle) read them again now.
  let fresh = a.admitted.leaseTaken && !original;
  for (let pass = 0; ; pass++) {
    if (!fresh) {
      const r = await recheck(deps, a, seat.id);
      // Losing the seat at the dispatch recheck is a definite not-sent, never uncertain.
      if (!r.seat || !r.present) return notSent(x, "seat_gone", `${seat.id} is no longer registered; nothing was sent`);
      if (r.seat.occupantId !== seat.occupantId)
        return notSent(
          x,
          "occupant_changed",
          `${seat.id} has a different occupant than when the message was admitted; nothing was sent`,
        );
      if (!r.seat.machine)
        return notSent(x, "seat_gone", `the machine of ${seat.id} is no longer registered; nothing was sent`);
      seat = r.seat;
      ({ original, previous, staleFence } = r);
    }
    if (!staleFence || pass > 0) break;
    // The unattended release may settle the original this message would be fenced by: look again after it.
    await releaseStaleFences(deps, seat);
    fresh = false;
  }
  if (original)
    return notSent(x, "fenced_by_unresolved_original", fenceRefusal(seat.id, original.id, original.state), "rejected", {
      originalDeliveryId: original.id,
      originalState: original.state,
    });

  const machine = seat.machine!;
  // The authority's age counts from here, so it covers the sender's recheck too.
  const checkedAt = performance.now();
  // Rule 26: the remote parts of a peer message's authority are read with the final observation.
  const refused = a.senderRecheck && (await a.senderRecheck());
  if (refused)
    return notSent(
      x,
      refused.reason,
      `${refused.detail} when the message was about to be sent; nothing was sent`,
      "rejected",
    );
  const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
  if (!(await conn.connect()))
    return notSent(
      x,
      "agent_unreachable",
      `the agent on ${machine.name} could not be reached at ${machine.endpoint}; nothing was sent`,
      "unavailable",
      { outcome: "seat_offline" },
    );
  if (deps.shutdownSignal.aborted) return notSent(x, "service_stopping", STOPPING);
  // ADR 0036: sent only while this instance surely still holds the lease epoch the call was admitted
  // under; a replica that wakes from a pause past its lease finds it untrusted here and sends nothing.
  if (!deps.lease.holds(a.fence.epoch)) {
    deps.logger.error("delivery refused before the send: this replica's instance lease is not surely live", {
      deliveryId: a.id,
      epoch: a.fence.epoch,
    });
    return notSent(
      x,
      "lease_lost",
      "this controller replica's instance lease was not surely live when the message was about to be sent (it paused, or lost the journal, past its lease); nothing was sent",
    );
  }

  let res: DeliverResponse;
  x.phase = "calling_agent";
  // Rule 55: the call also ends when the machine stops heartbeating (within 10 s), not only at the deliver timeout.
  const watch = deps.liveness.watch(machine.name, deps.shutdownSignal);
  try {
    res = await conn.client.deliver(
      create(DeliverRequestSchema, {
        seatName: seat.name,
        deliveryId: a.id,
        text: a.input.message,
        mode: deliveryModeWire.encode(a.mode),
        conversationId: a.conversationId,
        inReplyTo: a.input.inReplyTo ?? "",
        // The agent refuses an epoch a peer had it fence before taking this replica's turns over (ADR 0043).
        controllerInstance: a.fence.instance,
        controllerEpoch: BigInt(a.fence.epoch),
        authority: create(AuthoritySchema, {
          ageMs: Math.ceil(performance.now() - checkedAt),
          caller: a.conversationId,
          occupantId: seat.occupantId,
        }),
      }),
      { timeoutMs: deps.deliverTimeoutMs, signal: watch.signal },
    );
  } catch (e) {
    const err: AgentCallError = agentCallError(e);
    if (err.refusedBeforeWrite)
      return notSent(x, "agent_refused", `the agent refused the request before writing: ${err.message}`, "rejected");
    deps.logger.warn("delivery uncertain", { deliveryId: a.id, seat: seat.id, error: err.message });
    const lost =
      watch.signal.reason instanceof MachineOfflineError
        ? `the agent on ${machine.name} went offline (no heartbeat) while the request was in flight`
        : `the request may have reached the agent on ${machine.name} but its answer was lost (${err.grpcCode}: ${err.message})`;
    return settleUncertain(deps, x.d, x.turn, `${lost}; it will not be resent`);
  } finally {
    watch.done();
  }
  x.phase = "answered";
  await deps.hooks?.faults?.at("hang_after_agent_reply");
  if (deps.shutdownSignal.aborted && deps.hooks?.faults)
    return settleUncertain(
      deps,
      x.d,
      x.turn,
      "the controller stopped after the agent answered but before it recorded the answer; reconcile it",
      "controller_stopped",
    );
  const { body, outcome } = readVerdict(x.base, res);
  const sent = body.outcome === "delivered" || body.outcome === "unconfirmed";
  if (sent && previous.length) body.previous = previous;
  const settled = await settleDispatch(deps, x.d, x.turn, body, outcome, sent ? previous.map((p) => p.deliveryId) : []);
  // The fleet took this epoch's turns on that agent over: once its not-sent is on record, the epoch
  // is given up like a lost lease (ADR 0043).
  if (res.reason === EPOCH_FENCED) deps.lease.fencedByAgent?.(a.fence.epoch);
  return settled;
}

/**
 * The unattended release (ADR 0207, VUH-2358): an original unresolved for five minutes
 * stops fencing once its recipient is idle and its exact session was read in full without
 * it; it is kept as abandoned-unknown evidence, never resent. Found in the session, it is
 * recorded as delivered, as is one whose receipt kept the channel's exact acknowledgment
 * (rule 21). A busy seat or an unreadable session keeps the fence.
 */
export async function releaseStaleFences(deps: PipelineDeps, seat: { id: string }): Promise<void> {
  const now = deps.now();
  const stale = await openFencesOlderThan(deps.db, seat.id, new Date(now.getTime() - UNATTENDED_RELEASE_AFTER_MS));
  for (const fence of stale) {
    const delivery = await findDelivery(deps.db, fence.deliveryId);
    if (!delivery) continue;
    const evidence = await sessionEvidence(
      deps.db,
      deps.agents,
      seat.id,
      delivery.id,
      delivery.createdAt.getTime(),
      delivery,
    );
    if (evidence.kind === "found") {
      await settleFoundInSession(deps, delivery, evidence.nativeReceiptId);
    } else if (delivery.nativeReceiptId) {
      // The channel acknowledged the exact id (rule 21): that is never abandoned as unknown.
      await settleFoundInSession(deps, delivery, delivery.nativeReceiptId, "acknowledgment");
    } else if (evidence.kind === "absent" && idleReleases(evidence)) {
      await settleAbandoned(deps, delivery, "unattended", null, {
        session: "read in full without the original",
        seatStatus: evidence.status,
        ...(evidence.writeTurn ? { writeTurn: evidence.writeTurn } : {}),
        openedAt: fence.openedAt.toISOString(),
      });
      deps.logger.info("unattended release", { deliveryId: delivery.id, seat: seat.id });
    }
  }
}

/** The words of a fence refusal: exactly what is blocked (this text, to this seat), what is not, and what lifts it. */
export function fenceRefusal(seatId: string, originalId: string, originalState: string): string {
  const scope =
    `refused, nothing was sent: this text to ${seatId} matches delivery ${originalId}, which is ${originalState}. ` +
    `Blocked: only this same text to ${seatId}; other messages to ${seatId}, and this text to other seats, go through. `;
  if (originalState === "abandoned-unknown")
    return (
      scope +
      "It stays blocked: an abandoned original may be in the seat, so its text is never resent there; word the message differently."
    );
  return (
    scope +
    `To lift it: reconcile_seat_call {"deliveryId":"${originalId}"} (reads what the seat's session proves), or settle it with {"deliveryId":"${originalId}","settle":"not_delivered"}.`
  );
}

/**
 * The in-turn recheck for a delivery that did not take the lease at admission (the seat was busy) or that
 * must look again after the unattended release: the seat and its machine, the content fence and
 * `previous`, as of now, in one read-only statement (its columns named as the admission's).
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

async function recheck(deps: PipelineDeps, a: Admitted, seatId: string): Promise<SeatSnapshot & { present: boolean }> {
  const now = deps.now().getTime();
  const [row] = await recheckStatement(deps.db).run({
    id: a.id,
    seatId,
    conversationId: a.conversationId,
    contentFingerprint: contentFingerprint(a.input.message),
    abandonedSince: ts(new Date(now - ABANDONED_CONTENT_FENCE_MS)),
    staleBefore: ts(new Date(now - UNATTENDED_RELEASE_AFTER_MS)),
  });
  return { ...seatSnapshotOf(row), present: asBool(row?.present) };
}
