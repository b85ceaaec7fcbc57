/**
 * The AgentGatewayService methods for message_clankie from panes (controller/workers/inbound.ts).
 * The worker's machine is the client certificate's (ADR 0021): a request naming another is refused.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, FleetError, InvalidArgumentError } from "../../shared/errors.js";
import {
  type AgentGatewayService,
  BindWorkerResponseSchema,
  ListFleetSeatsResponseSchema,
  PeerMessageStatusResponseSchema,
  PeerSeatSchema,
  SendPeerMessageResponseSchema,
  SubmitWorkerMessageResponseSchema,
  SubmitWorkerQuestionResponseSchema,
  WorkerMessageStatusResponseSchema,
} from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import type { PipelineDeps } from "../delivery/pipeline.js";
import { listFleetSeats, peerMessageStatus, sendPeerMessage } from "./peers.js";
import { isValidName, parseUuid } from "../../shared/ids.js";
import { assertJournalText, assertWellFormedText } from "../../shared/well-formed-text.js";
import { quoteInput } from "../../shared/public-text.js";
import type { Db } from "../db/open.js";
import type { Registry } from "../nodes/registry.js";
import { bindWorker, submitWorkerMessage, workerMessageStatus } from "./inbound.js";
import { machineOf } from "../fleet/peer-identity.js";
import type { WorkerCall } from "../delivery/faults.js";
import { fileWorkerQuestion } from "./questions.js";

export const MAX_WORKER_MESSAGE_CHARS = 32_768;

type Methods = Pick<
  ServiceImpl<typeof AgentGatewayService>,
  | "bindWorker"
  | "submitWorkerMessage"
  | "workerMessageStatus"
  | "listFleetSeats"
  | "sendPeerMessage"
  | "peerMessageStatus"
  | "submitWorkerQuestion"
>;

export function workerGatewayMethods(
  registry: Registry,
  deps: { db: Db; now: () => Date; onChange: () => void; pipeline?: PipelineDeps | undefined },
): Methods {
  const pipeline = (): PipelineDeps => {
    if (!deps.pipeline) throw new FleetError(ErrorCode.Unimplemented, "this controller does not deliver peer messages");
    return deps.pipeline;
  };
  const known = async (machine: string, instanceId: string, seatName: string) => {
    if (!(await registry.heartbeat(machine, instanceId)))
      throw new FleetError(ErrorCode.FailedPrecondition, "unknown agent instance; register again");
    if (!isValidName(seatName)) throw new InvalidArgumentError(`seat name ${quoteInput(seatName)} is not valid`);
  };
  /**
   * Runs ACT unless a suite's fault point loses the call: before acting (the request never
   * arrived) or after (its answer never left). Either way the agent sees the transport failure a
   * cut link gives, never a typed refusal, so the worker must treat it as uncertain.
   */
  const unlessLost = async <T>(call: WorkerCall, act: () => Promise<T>): Promise<T> => {
    const loss = deps.pipeline?.hooks?.faults?.loses?.(call);
    if (loss === "request")
      throw new FleetError(
        ErrorCode.ControllerUnreachable,
        `the ${call.op} request for ${call.id} was lost before the controller acted (fault point)`,
      );
    const answer = await act();
    if (loss === "answer")
      throw new FleetError(
        ErrorCode.ControllerUnreachable,
        `the answer to the ${call.op} request for ${call.id} was lost after the controller acted (fault point)`,
      );
    return answer;
  };
  return {
    async bindWorker(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      const b = await bindWorker(deps.db, req.machine, req.seatName, req.occupantId);
      return create(
        BindWorkerResponseSchema,
        b.bound
          ? { bound: true, seatId: b.seatId, binding: b.binding }
          : { bound: false, reason: b.reason, detail: b.detail },
      );
    },
    async submitWorkerMessage(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      req.id = parseUuid("message id", req.id);
      if (req.text.length === 0 || req.text.length > MAX_WORKER_MESSAGE_CHARS)
        throw new InvalidArgumentError(`a message must have 1-${MAX_WORKER_MESSAGE_CHARS} characters`);
      assertJournalText("text", req.text);
      return unlessLost({ op: "worker_send", id: req.id, text: req.text }, async () => {
        const r = await submitWorkerMessage(
          deps.db,
          req.machine,
          {
            seatName: req.seatName,
            binding: req.binding,
            id: req.id,
            text: req.text,
            createdAtMs: Number(req.createdUnixMs),
          },
          deps.now(),
        );
        if (r.stage === "stored") deps.onChange();
        return create(
          SubmitWorkerMessageResponseSchema,
          r.stage === "stored"
            ? { deliveryStage: "stored" }
            : { deliveryStage: "rejected", definitiveNotSent: true, reason: r.reason, detail: r.detail },
        );
      });
    },
    async workerMessageStatus(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      req.id = parseUuid("message id", req.id);
      return unlessLost({ op: "worker_status", id: req.id }, async () => {
        const s = await workerMessageStatus(deps.db, req.machine, req.seatName, req.id, req.settleUnknown, deps.now());
        return create(WorkerMessageStatusResponseSchema, {
          deliveryStage: s.stage,
          definitiveNotSent: s.definitiveNotSent,
          detail: s.detail,
        });
      });
    },
    async listFleetSeats(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      const r = await listFleetSeats(deps.db, req.machine, req.seatName, req.binding);
      if (r.refused)
        return create(ListFleetSeatsResponseSchema, { allowed: false, reason: r.reason, detail: r.detail });
      return create(ListFleetSeatsResponseSchema, {
        allowed: true,
        seats: r.seats.map((x) =>
          create(PeerSeatSchema, { seatId: x.id, kind: x.kind, title: x.title, status: x.status }),
        ),
      });
    },
    async sendPeerMessage(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      req.id = parseUuid("message id", req.id);
      if (req.text.length === 0 || req.text.length > MAX_WORKER_MESSAGE_CHARS)
        throw new InvalidArgumentError(`a message must have 1-${MAX_WORKER_MESSAGE_CHARS} characters`);
      assertWellFormedText("text", req.text);
      if (req.recipientSeat.length === 0 || req.recipientSeat.length > 200)
        throw new InvalidArgumentError("name the recipient seat");
      return unlessLost({ op: "peer_send", id: req.id, text: req.text }, async () => {
        const o = await sendPeerMessage(pipeline(), {
          machine: req.machine,
          seatName: req.seatName,
          binding: req.binding,
          recipient: req.recipientSeat,
          id: req.id,
          text: req.text,
        });
        if ("refused" in o)
          return create(SendPeerMessageResponseSchema, {
            state: "refused",
            bodyJson: JSON.stringify({
              schemaVersion: 1,
              outcome: "undelivered",
              reason: o.reason,
              detail: `${o.detail}; nothing was sent`,
              deliveryId: req.id,
            }),
          });
        return create(SendPeerMessageResponseSchema, { state: o.state, bodyJson: JSON.stringify(o.body) });
      });
    },
    async peerMessageStatus(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      req.id = parseUuid("message id", req.id);
      return unlessLost({ op: "peer_status", id: req.id }, async () => {
        const o = await peerMessageStatus(pipeline(), {
          machine: req.machine,
          seatName: req.seatName,
          binding: req.binding,
          id: req.id,
        });
        if ("refused" in o)
          return create(PeerMessageStatusResponseSchema, {
            state: "unknown",
            bodyJson: JSON.stringify({ schemaVersion: 1, outcome: "refused", reason: o.reason, detail: o.detail }),
          });
        const unknown = o.body.outcome === "no_matching_receipt";
        return create(PeerMessageStatusResponseSchema, {
          state: unknown ? "unknown" : o.state,
          bodyJson: JSON.stringify(o.body),
        });
      });
    },
    async submitWorkerQuestion(rq, ctx) {
      const req = { ...rq, machine: machineOf(ctx, rq.machine).machine };
      await known(req.machine, req.instanceId, req.seatName);
      const ids = [req.threadId, req.turnId, req.itemId, req.requestId];
      if (ids.some((x) => x.length === 0 || x.length > 200))
        throw new InvalidArgumentError(
          "a question needs its thread, turn, call and request ids (1-200 characters each)",
        );
      if (
        req.questions.length === 0 ||
        req.questions.length > 20 ||
        req.questions.some((q) => q.id.length === 0 || q.question.length === 0)
      )
        throw new InvalidArgumentError("a question needs 1-20 items, each with an id and a text");
      const r = await fileWorkerQuestion(
        deps.db,
        req.machine,
        {
          seatName: req.seatName,
          occupantId: req.occupantId,
          threadId: req.threadId,
          turnId: req.turnId,
          itemId: req.itemId,
          requestId: req.requestId,
          questions: req.questions.map((q) => ({
            id: q.id,
            header: q.header,
            question: q.question,
            isOther: q.isOther,
            options: q.options.map((o) => ({ label: o.label, description: o.description })),
          })),
          askedAtMs: Number(req.askedUnixMs) || deps.now().getTime(),
        },
        deps.now(),
      );
      if (r.filed) deps.onChange();
      return create(
        SubmitWorkerQuestionResponseSchema,
        r.filed ? { filed: true, questionId: r.questionId } : { filed: false, reason: r.reason, detail: r.detail },
      );
    },
  };
}
