/**
 * message_seat, step three, inside the seat's turn (turn.ts): recheck the seat when it was busy (the
 * recheck statement, dispatch-statements.ts), release stale fences unattended, refuse a resend of an
 * unresolved original's content, make the one Deliver call, read the agent's verdict (verdict.ts), and
 * settle in one statement (settle.ts). The phase the dispatch reached decides a failure's meaning: before
 * `calling_agent` nothing can have been sent (a definite not-sent); during it, a lost answer is uncertain
 * and is never retried.
 */
import { idleReleases } from "./idle-release.js";
import { MachineOfflineError } from "../nodes/liveness.js";
import { create } from "@bufbuild/protobuf";
import {
  AuthoritySchema,
  DeliverRequestSchema,
  type DeliverResponse,
} from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { contentFingerprint } from "../../shared/fingerprint.js";
import { type AgentCallError, agentCallError } from "../../shared/errors.js";
import { ReceiptState, deliveryModeWire, type DeliveryMode } from "../../shared/verdicts.js";
import {
  UNATTENDED_RELEASE_AFTER_MS,
  type Admitted as AdmittedRow,
  type AdmittedSeat,
  type BodyBase,
  type DispatchRecord,
} from "./receipt-types.js";
import { ABANDONED_CONTENT_FENCE_MS, openFencesOlderThan } from "../journal/fences.js";
import type { MessageSeatInput, PipelineDeps, SenderRecheck } from "./pipeline.js";
import type { MessageSeatBody, ToolOutcome } from "./result-bodies.js";
import {
  journalError,
  sessionEvidence,
  settleAbandoned,
  settleDispatch,
  settleFoundInSession,
  settleUncertain,
} from "./settle.js";
import { withSeatTurn, type SeatTurn } from "./turn.js";
import { findDelivery } from "../journal/delivery-receipts.js";
import type { InstanceEpoch } from "../journal/instances.js";
import { recheckDelivery } from "./dispatch-statements.js";
import { readVerdict } from "./verdict.js";
import { EPOCH_FENCED } from "../../shared/verdicts.js";

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

export async function dispatchInTurn(deps: PipelineDeps, a: Admitted): Promise<ToolOutcome> {
  const seat = a.admitted.seat!;
  const d: DispatchRecord = {
    id: a.id,
    conversationId: a.conversationId,
    seatId: seat.id,
    message: a.input.message,
    fence: a.fence,
  };
  const base: BodyBase = { schemaVersion: 1, deliveryId: a.id, seat: seat.id };
  const state: { phase: Phase; turn?: SeatTurn } = { phase: "waiting_turn" };
  const notSent = (
    reason: MessageSeatBody["reason"] & string,
    detail: string,
    stage: MessageSeatBody["deliveryStage"] = "unavailable",
  ) =>
    settleDispatch(
      deps,
      d,
      state.turn,
      { ...base, outcome: "undelivered", deliveryStage: stage, reason, detail },
      { state: ReceiptState.NotSent, reason, detail },
    );
  try {
    return await withSeatTurn(deps.turns, { seatId: seat.id, holder: a.holder, entered: a.entered }, (turn) => {
      state.turn = turn;
      return run(deps, a, seat, base, d, state, notSent);
    });
  } catch (e) {
    if (state.phase === "calling_agent" || state.phase === "answered") throw e;
    // Before the request existed: definite, even if it cannot be recorded yet.
    deps.logger.warn("journal failed before dispatch", { deliveryId: a.id, error: (e as Error).message });
    return notSent(
      "journal_unavailable",
      `the receipt journal failed after this receipt was committed and before anything was sent (${journalError(e)})`,
    );
  }
}

type NotSent = (
  reason:
    | "seat_gone"
    | "occupant_changed"
    | "agent_refused"
    | "journal_unavailable"
    | "service_stopping"
    | "binding_stale"
    | "peers_off"
    | "lease_lost",
  detail: string,
  stage?: MessageSeatBody["deliveryStage"],
) => Promise<ToolOutcome>;

async function run(
  deps: PipelineDeps,
  a: Admitted,
  admittedSeat: AdmittedSeat,
  base: BodyBase,
  d: DispatchRecord,
  state: { phase: Phase; turn?: SeatTurn },
  notSent: NotSent,
): Promise<ToolOutcome> {
  await deps.hooks?.faults?.at("hang_after_admit");
  state.phase = "checking";
  if (deps.shutdownSignal.aborted)
    return notSent(
      "service_stopping",
      "the controller stopped before this message reached the agent; nothing was sent",
    );

  let seat = admittedSeat;
  let original = a.admitted.original;
  let previous = a.admitted.previous;
  let stale = a.admitted.staleFence;
  // Read at admission under the lease, these are current; otherwise (the seat was busy, or the
  // admission's snapshot predates another delivery's settle) read them again now.
  let fresh = a.admitted.leaseTaken && !original;
  for (let pass = 0; ; pass++) {
    if (!fresh) {
      const now = deps.now();
      const r = await recheckDelivery(deps.db, {
        id: a.id,
        seatId: admittedSeat.id,
        conversationId: a.conversationId,
        contentFingerprint: contentFingerprint(a.input.message),
        abandonedSince: new Date(now.getTime() - ABANDONED_CONTENT_FENCE_MS),
        staleBefore: new Date(now.getTime() - UNATTENDED_RELEASE_AFTER_MS),
      });
      // Losing the seat at the dispatch recheck is a definite not-sent, never uncertain.
      if (!r.seat?.present) return notSent("seat_gone", `${admittedSeat.id} is no longer registered; nothing was sent`);
      if (r.seat.occupantId !== admittedSeat.occupantId)
        return notSent(
          "occupant_changed",
          `${admittedSeat.id} has a different occupant than when the message was admitted; nothing was sent`,
        );
      if (!r.seat.machine)
        return notSent("seat_gone", `the machine of ${admittedSeat.id} is no longer registered; nothing was sent`);
      seat = r.seat;
      original = r.original;
      previous = r.previous;
      stale = r.staleFence;
    }
    if (!stale || pass > 0) break;
    // The unattended release may settle the original this message would be fenced by: look again after it.
    await releaseStaleFences(deps, seat);
    fresh = false;
  }
  if (original) {
    const detail = fenceRefusal(seat.id, original.id, original.state);
    const body: MessageSeatBody = {
      ...base,
      outcome: "undelivered",
      deliveryStage: "rejected",
      reason: "fenced_by_unresolved_original",
      detail,
      originalDeliveryId: original.id,
      originalState: original.state,
    };
    return settleDispatch(deps, d, state.turn, body, {
      state: ReceiptState.NotSent,
      reason: "fenced_by_unresolved_original",
      detail,
    });
  }

  const machine = seat.machine!;
  // The authority's age counts from here, so it covers the sender's recheck too.
  const checkedAt = performance.now();
  if (a.senderRecheck) {
    // Rule 26: the remote parts of a peer message's authority are read with the final observation.
    const refused = await a.senderRecheck();
    if (refused)
      return notSent(
        refused.reason,
        `${refused.detail} when the message was about to be sent; nothing was sent`,
        "rejected",
      );
  }
  const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
  if (!(await conn.connect())) {
    const body: MessageSeatBody = {
      ...base,
      outcome: "seat_offline",
      deliveryStage: "unavailable",
      reason: "agent_unreachable",
      detail: `the agent on ${machine.name} could not be reached at ${machine.endpoint}; nothing was sent`,
    };
    return settleDispatch(deps, d, state.turn, body, {
      state: ReceiptState.NotSent,
      reason: "agent_unreachable",
      detail: body.detail,
    });
  }
  if (deps.shutdownSignal.aborted)
    return notSent(
      "service_stopping",
      "the controller stopped before this message reached the agent; nothing was sent",
    );
  // ADR 0036: sent only while this instance surely still holds the lease epoch the call was admitted
  // under; a replica that wakes from a pause past its lease finds it untrusted here and sends nothing.
  if (!deps.lease.holds(a.fence.epoch)) {
    deps.logger.error("delivery refused before the send: this replica's instance lease is not surely live", {
      deliveryId: a.id,
      epoch: a.fence.epoch,
    });
    return notSent(
      "lease_lost",
      "this controller replica's instance lease was not surely live when the message was about to be sent (it paused, or lost the journal, past its lease); nothing was sent",
      "unavailable",
    );
  }

  let res: DeliverResponse;
  state.phase = "calling_agent";
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
      return notSent("agent_refused", `the agent refused the request before writing: ${err.message}`, "rejected");
    deps.logger.warn("delivery uncertain", { deliveryId: a.id, seat: seat.id, error: err.message });
    const offline =
      watch.signal.reason instanceof MachineOfflineError
        ? `the agent on ${machine.name} went offline (no heartbeat) while the request was in flight`
        : undefined;
    return settleUncertain(
      deps,
      d,
      state.turn,
      `${offline ?? `the request may have reached the agent on ${machine.name} but its answer was lost (${err.grpcCode}: ${err.message})`}; it will not be resent`,
    );
  } finally {
    watch.done();
  }
  state.phase = "answered";
  await deps.hooks?.faults?.at("hang_after_agent_reply");
  if (deps.shutdownSignal.aborted && deps.hooks?.faults) {
    return settleUncertain(
      deps,
      d,
      state.turn,
      "the controller stopped after the agent answered but before it recorded the answer; reconcile it",
      "controller_stopped",
    );
  }
  const { body, outcome } = readVerdict(base, res);
  const sent = body.outcome === "delivered" || body.outcome === "unconfirmed";
  if (sent && previous.length) body.previous = previous;
  const settled = await settleDispatch(
    deps,
    d,
    state.turn,
    body,
    outcome,
    sent ? previous.map((p) => p.deliveryId) : [],
  );
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
