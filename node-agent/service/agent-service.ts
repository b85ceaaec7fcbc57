/**
 * The node agent's gRPC service: InspectSeat, Deliver, ReadSession, FenceMailboxDelivery, CreateSeat, StopSeat,
 * AnswerQuestion (and the hire methods).
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import {
  type AgentService,
  AnswerQuestionResponseSchema,
  CreateSeatResponseSchema,
  DeliverResponseSchema,
  FenceControllerEpochResponseSchema,
  FenceMailboxDeliveryResponseSchema,
  InspectSeatResponseSchema,
  MailboxFenceState,
  ReadSessionResponseSchema,
  SessionEntrySchema,
  StopSeatResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { ProofSchema } from "../../shared/gen/clankie/fleet/v1/delivery_pb.js";
import { isValidName, parseUuid } from "../../shared/ids.js";
import {
  AgentResult,
  agentResultWire,
  deliveryModeWire,
  seatKindWire,
  seatStatusWire,
  SeatKind,
  EPOCH_FENCED,
} from "../../shared/verdicts.js";
import { deliver, type DeliverDeps } from "../deliver/deliver.js";
import type { MailboxStore } from "../mailbox/store.js";
import { toWireSeat } from "./wire-seat.js";
import { LINK_SESSION, type LinkRoundTrips } from "./link-round-trips.js";
import type { SeatLocks } from "../seats/seat-locks.js";
import { hireMethods } from "../hire/hire-service.js";
import type { Hirer } from "../hire/hire.js";
import type { QuestionDesk } from "../questions/question-desk.js";
import { EpochFences } from "../seats/epoch-fences.js";

export interface AgentServiceDeps extends DeliverDeps {
  mailboxes: MailboxStore;
  /** One operation per seat at a time (seat-locks.ts). */
  locks: SeatLocks;
  /** The controller link's measured round trips; absent: every request uses the unmeasured transit bound. */
  roundTrips?: LinkRoundTrips | undefined;
  /** hire_agent's launcher; absent until the pane host is up. */
  hirer?: (() => Hirer | undefined) | undefined;
  /** Workers' questions (node-agent/questions/); absent: every answer is refused, nothing sent. */
  questions?: QuestionDesk | undefined;
  /** The controller epochs fenced here and the Deliver calls in flight per epoch (ADR 0043). */
  epochFences?: EpochFences | undefined;
}

function requireSeat(deps: AgentServiceDeps, name: string) {
  const seat = deps.seats.get(name);
  if (!seat) throw new FleetError(ErrorCode.UnknownSeat, `this agent hosts no seat named ${name}`);
  const adapter = deps.adapters.get(seat.kind);
  if (!adapter) throw new FleetError(ErrorCode.Unimplemented, `no adapter for ${seat.kind} seats`);
  return { seat, adapter };
}

export function createAgentService(deps: AgentServiceDeps): ServiceImpl<typeof AgentService> {
  const fences = deps.epochFences ?? new EpochFences();
  return {
    ...hireMethods(deps.hirer ?? (() => undefined)),
    async inspectSeat(req) {
      const { seat, adapter } = requireSeat(deps, req.seatName);
      const { snapshot } = await deps.locks.run(seat.name, () => adapter.inspect(seat));
      return create(InspectSeatResponseSchema, { seat: toWireSeat(seat, snapshot) });
    },

    async deliver(req, ctx) {
      const arrivedAtMs = deps.clock.nowMs();
      // Refusals as errors happen only here, before any seat is touched.
      // Canonical before it names a mailbox file or a native receipt (issue 32 item 4).
      req.deliveryId = parseUuid("delivery_id", req.deliveryId);
      if (req.text.length === 0) throw new FleetError(ErrorCode.InvalidArgument, "text must not be empty");
      const mode = deliveryModeWire.decode(req.mode);
      if (!mode) throw new FleetError(ErrorCode.InvalidArgument, `unknown delivery mode ${req.mode}`);
      // ADR 0043: an epoch fenced here is refused before the seat is touched; otherwise the call
      // counts as in flight to the seat from now, so a fence asked meanwhile names this seat.
      const epoch = Number(req.controllerEpoch);
      const flight = fences.begin(req.seatName, req.controllerInstance, epoch, ctx.values.get(LINK_SESSION));
      if (!flight)
        return create(DeliverResponseSchema, {
          result: agentResultWire.encode(AgentResult.NotSent),
          reason: EPOCH_FENCED,
          detail: `controller ${req.controllerInstance} epoch ${epoch} is fenced on this agent (its seat turns were taken over); nothing was written`,
        });
      // The gate and the write hold the seat: nothing else inspects it in between.
      const verdict = await deps.locks
        .run(req.seatName, () =>
          deliver(deps, {
            seatName: req.seatName,
            deliveryId: req.deliveryId,
            text: req.text,
            mode,
            conversationId: req.conversationId,
            inReplyTo: req.inReplyTo || undefined,
            occupantId: req.authority?.occupantId ?? "",
            authorityAgeMs: req.authority?.ageMs ?? 0,
            arrivedAtMs,
            // The round trips of the link this call came on, not of another the agent has or had.
            transitBoundMs: deps.roundTrips?.transitBoundMs(ctx.values.get(LINK_SESSION)),
          }),
        )
        .finally(flight.done);
      return create(DeliverResponseSchema, {
        result: agentResultWire.encode(verdict.result),
        nativeReceiptId: verdict.nativeReceiptId ?? "",
        nativeMessageId: verdict.nativeMessageId ?? "",
        nativeSessionPath: verdict.nativeSessionPath ?? "",
        detail: verdict.detail,
        reason: verdict.reason ?? "",
        proofs: verdict.proofs.map((p) =>
          create(ProofSchema, {
            kind: p.kind,
            outcome: p.outcome,
            detail: p.detail,
            ageAtWriteMs: Math.max(0, p.ageAtWriteMs),
          }),
        ),
        proofAgeMs: Math.max(0, verdict.proofAgeMs),
        replayed: verdict.replayed,
        deliveryStage: verdict.deliveryStage ?? "",
      });
    },

    async fenceControllerEpoch(req) {
      if (!req.controllerInstance) throw new FleetError(ErrorCode.InvalidArgument, "controller_instance is required");
      const answer = fences.fence(req.controllerInstance, Number(req.controllerEpoch));
      return create(FenceControllerEpochResponseSchema, answer);
    },

    async readSession(req) {
      const { seat, adapter } = requireSeat(deps, req.seatName);
      const read = await adapter.readSession(seat, Number(req.sinceUnixMs), req.deliveryId || undefined);
      return create(ReadSessionResponseSchema, {
        occupantId: read.occupantId,
        status: seatStatusWire.encode(read.status),
        complete: read.complete,
        sessionPath: read.sessionPath ?? "",
        writeTurn: read.writeTurn ?? "",
        entries: read.entries.map((e) =>
          create(SessionEntrySchema, {
            deliveryId: e.deliveryId,
            nativeReceiptId: e.nativeReceiptId,
            contentFingerprint: e.contentFingerprint,
            atUnixMs: BigInt(e.atMs),
          }),
        ),
      });
    },

    async fenceMailboxDelivery(req) {
      const { seat } = requireSeat(deps, req.seatName);
      if (seat.kind !== SeatKind.Mailbox) {
        const why = `${seat.name} is a ${seat.kind} seat; only a mailbox's absence is fenced`;
        throw new FleetError(ErrorCode.FailedPrecondition, why);
      }
      const f = deps.mailboxes.fence(seat.name, parseUuid("delivery_id", req.deliveryId));
      const answer = FenceMailboxDeliveryResponseSchema;
      if (f.state === "writing") return create(answer, { state: MailboxFenceState.WRITING, path: f.path });
      if (f.state === "fenced") {
        return create(answer, { state: MailboxFenceState.FENCED, path: f.path, fencedAtUnixMs: BigInt(f.fencedAtMs) });
      }
      return create(answer, {
        state: MailboxFenceState.FOUND,
        path: f.path,
        nativeReceiptId: `${seat.name}#${f.entry.seq}`,
        contentFingerprint: f.entry.contentFingerprint,
      });
    },

    async stopSeat(req) {
      const { seat, adapter } = requireSeat(deps, req.seatName);
      if (req.occupantId && req.occupantId !== seat.occupantId) {
        return create(StopSeatResponseSchema, {
          result: "unavailable",
          detail: "the seat has a different occupant than the controller checked; nothing was sent",
        });
      }
      if (!adapter.stop)
        return create(StopSeatResponseSchema, {
          result: "unsupported",
          detail: `${seat.kind} seats have no native stop`,
        });
      const stop = adapter.stop.bind(adapter);
      const r = await deps.locks.run(seat.name, () => stop(seat));
      return create(StopSeatResponseSchema, r);
    },

    async answerQuestion(req) {
      if (!deps.questions)
        return create(AnswerQuestionResponseSchema, {
          result: "refused",
          reason: "unsupported",
          detail: "this agent watches no questions; nothing was sent",
        });
      const answers = Object.fromEntries(Object.entries(req.answers).map(([k, v]) => [k, { answers: [...v.answers] }]));
      // reconcile_only re-reads the receipt of the earlier claim: nothing is sent.
      const o = req.reconcileOnly
        ? await deps.questions.reconcile(req.seatName, req.occupantId, req.requestId)
        : await deps.questions.answer(req.seatName, req.occupantId, req.requestId, answers);
      const receipt =
        "receipt" in o && o.receipt ? { receiptCallId: o.receipt.callId, receiptTurnId: o.receipt.turnId } : {};
      const detail = "detail" in o && o.detail ? o.detail : "";
      return create(AnswerQuestionResponseSchema, {
        result: o.result,
        reason: "reason" in o ? o.reason : "",
        detail,
        ...receipt,
      });
    },

    async createSeat(req) {
      if (!isValidName(req.name))
        throw new FleetError(ErrorCode.InvalidArgument, "seat name must be 1-64 letters, digits, '.', '-' or '_'");
      const kind = seatKindWire.decode(req.kind);
      if (kind !== SeatKind.Mailbox) {
        throw new FleetError(
          ErrorCode.InvalidArgument,
          `only mailbox seats can be created by the agent; ${kind ?? "unspecified"} seats are discovered from their panes`,
        );
      }
      let added;
      try {
        added = deps.seats.add(req.name, kind, req.title);
      } catch (e) {
        throw new FleetError(ErrorCode.AlreadyExists, (e as Error).message);
      }
      deps.mailboxes.create(req.name);
      const adapter = deps.adapters.get(kind)!;
      const { snapshot } = await deps.locks.run(added.seat.name, () => adapter.inspect(added.seat));
      return create(CreateSeatResponseSchema, { seat: toWireSeat(added.seat, snapshot), created: added.created });
    },
  };
}
