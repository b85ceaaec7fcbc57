/**
 * message_seat, the controller's half of one delivery:
 *   admit (call receipt + delivery receipt, one transaction, before any effect)
 *   → take the seat's turn → one Deliver call to the seat's agent → settle.
 * A failure before the request could reach the agent is a definite not-sent; after
 * that, a lost answer is uncertain and is never retried.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { and, eq, or } from "drizzle-orm";
import { AuthoritySchema, DeliverRequestSchema, type DeliverResponse } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { callFingerprint, contentFingerprint } from "../../shared/fingerprint.js";
import { isUuid, newDeliveryId } from "../../shared/ids.js";
import { InvalidArgumentError, JournalUnavailableError, ServiceStoppingError } from "../../shared/errors.js";
import { AgentResult, ReceiptState, agentResultWire, deliveryModeWire, type DeliveryMode } from "../../shared/verdicts.js";
import type { Logger } from "../../shared/logger.js";
import type { Db } from "../db/open.js";
import { machines, seats, type Machine, type SeatRowDb } from "../db/schema.js";
import { admitCall, CallState, settleCall, type Admission } from "../journal/call-receipts.js";
import { openDelivery, settleDelivery, type DeliveryOutcome } from "../journal/delivery-receipts.js";
import type { AgentClients } from "../nodes/agent-clients.js";
import type { SeatTurns } from "./seat-turns.js";
import { uncertainBody, type MessageSeatBody, type ToolOutcome } from "./result-bodies.js";
import { replayAdmission } from "./replay.js";

export const MESSAGE_SEAT = "message_seat";
/** How long the controller waits for an agent's answer before the delivery is uncertain. */
export const DELIVER_TIMEOUT_MS = 20_000;

export interface MessageSeatInput {
  seat: string;
  message: string;
  delivery?: "steer" | "queue" | undefined;
  inReplyTo?: string | undefined;
}

export interface CallScope {
  conversationId: string;
  /** The id from `_meta["clankie/seat-call"].deliveryId`, when the caller minted one. */
  deliveryId?: string | undefined;
}

export interface PipelineDeps {
  db: Db;
  agents: AgentClients;
  turns: SeatTurns;
  logger: Logger;
  now: () => Date;
  isStopping: () => boolean;
  /** Aborted when the controller stops: in-flight calls then answer uncertain. */
  shutdownSignal: AbortSignal;
  onJournalChange: () => void;
  deliverTimeoutMs?: number;
  /** Registers an in-flight dispatch so a stop can wait for it. */
  track?: <T>(p: Promise<T>) => Promise<T>;
}

type Plan =
  | { kind: "replay"; admission: Exclude<Admission, { kind: "admitted" }> }
  | { kind: "settled"; body: MessageSeatBody }
  | { kind: "dispatch"; seat: SeatRowDb; machine: Machine };

/** Errors the agent raises only before touching the seat: the message was not written. */
const REFUSED_BEFORE_WRITE = new Set([Code.InvalidArgument, Code.Unauthenticated, Code.PermissionDenied, Code.NotFound, Code.FailedPrecondition, Code.Unimplemented]);

export async function messageSeat(deps: PipelineDeps, scope: CallScope, input: MessageSeatInput): Promise<ToolOutcome> {
  if (deps.isStopping()) throw new ServiceStoppingError();
  const id = scope.deliveryId ?? newDeliveryId();
  if (!isUuid(id)) throw new InvalidArgumentError(`_meta["clankie/seat-call"].deliveryId must be a UUID, got ${JSON.stringify(id)}`);
  const mode: DeliveryMode = input.delivery ?? "auto";
  const fingerprint = callFingerprint(MESSAGE_SEAT, input);
  const base = { schemaVersion: 1 as const, deliveryId: id, seat: input.seat };

  let plan: Plan;
  try {
    plan = await deps.db.transaction(async (tx) => {
      const admission = await admitCall(tx, { id, tool: MESSAGE_SEAT, conversationId: scope.conversationId, fingerprint });
      if (admission.kind !== "admitted") return { kind: "replay", admission } as const;
      const found = await tx
        .select()
        .from(seats)
        .where(and(eq(seats.present, true), or(eq(seats.id, input.seat), eq(seats.name, input.seat))));
      if (found.length !== 1) {
        const body: MessageSeatBody = {
          ...base,
          outcome: "unknown_seat",
          deliveryStage: "rejected",
          reason: found.length === 0 ? "unknown_seat" : "ambiguous_seat",
          detail: found.length === 0 ? `no seat is named ${input.seat}; nothing was sent` : `${found.length} seats are named ${input.seat}; use machine/name; nothing was sent`,
        };
        await settleCall(tx, id, CallState.Settled, body, deps.now());
        return { kind: "settled", body } as const;
      }
      const seat = found[0]!;
      const [machine] = await tx.select().from(machines).where(eq(machines.name, seat.machine));
      if (!machine) throw new Error(`seat ${seat.id} names unknown machine ${seat.machine}`);
      await openDelivery(tx, { id, conversationId: scope.conversationId, seatId: seat.id, contentFingerprint: contentFingerprint(input.message), mode, inReplyTo: input.inReplyTo });
      return { kind: "dispatch", seat, machine } as const;
    });
  } catch (e) {
    throw new JournalUnavailableError(`the receipt journal could not be written, so nothing was dispatched: ${(e as Error).message}`, e);
  }
  deps.onJournalChange();

  if (plan.kind === "replay") return replayAdmission(MESSAGE_SEAT, id, plan.admission);
  if (plan.kind === "settled") return { id, tool: MESSAGE_SEAT, state: "settled", body: plan.body, isError: false };
  const dispatched = dispatch(deps, scope, input, id, mode, plan.seat, plan.machine);
  return deps.track ? deps.track(dispatched) : dispatched;
}

async function dispatch(deps: PipelineDeps, scope: CallScope, input: MessageSeatInput, id: string, mode: DeliveryMode, seat: SeatRowDb, machine: Machine): Promise<ToolOutcome> {
  const base = { schemaVersion: 1 as const, deliveryId: id, seat: seat.id };
  const turn = await deps.turns.take(seat.id);
  try {
    // The controller's authority (caller, seat, occupant, machine) was checked at admission.
    const checkedAt = performance.now();
    const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
    if (!(await conn.connect())) {
      const body: MessageSeatBody = { ...base, outcome: "seat_offline", deliveryStage: "unavailable", reason: "agent_unreachable", detail: `the agent on ${machine.name} could not be reached at ${machine.endpoint}; nothing was sent` };
      return await settle(deps, id, body, { state: ReceiptState.NotSent, reason: "agent_unreachable", detail: body.detail });
    }
    let res: DeliverResponse;
    try {
      res = await conn.client.deliver(
        create(DeliverRequestSchema, {
          seatName: seat.name,
          deliveryId: id,
          text: input.message,
          mode: deliveryModeWire.encode(mode),
          conversationId: scope.conversationId,
          inReplyTo: input.inReplyTo ?? "",
          authority: create(AuthoritySchema, { ageMs: Math.ceil(performance.now() - checkedAt), caller: scope.conversationId, occupantId: seat.occupantId }),
        }),
        { timeoutMs: deps.deliverTimeoutMs ?? DELIVER_TIMEOUT_MS, signal: deps.shutdownSignal },
      );
    } catch (e) {
      const err = ConnectError.from(e);
      if (REFUSED_BEFORE_WRITE.has(err.code)) {
        const body: MessageSeatBody = { ...base, outcome: "undelivered", deliveryStage: "rejected", reason: "agent_refused", detail: `the agent refused the request before writing: ${err.rawMessage}` };
        return await settle(deps, id, body, { state: ReceiptState.NotSent, reason: "agent_refused", detail: body.detail });
      }
      const detail = `the request may have reached the agent on ${machine.name} but its answer was lost (${Code[err.code]}: ${err.rawMessage}); it will not be resent`;
      deps.logger.warn("delivery uncertain", { deliveryId: id, seat: seat.id, error: err.message });
      return await settleUncertain(deps, id, detail);
    }
    return await settle(deps, id, bodyFromAgent(base, res), outcomeFromAgent(res));
  } finally {
    turn.release();
  }
}

function bodyFromAgent(base: { schemaVersion: 1; deliveryId: string; seat: string }, res: DeliverResponse): MessageSeatBody {
  const result = agentResultWire.decode(res.result);
  const evidence = {
    detail: res.detail,
    ...(res.reason ? { reason: res.reason } : {}),
    ...(res.nativeReceiptId ? { nativeReceiptId: res.nativeReceiptId } : {}),
    proofAgeMs: res.proofAgeMs,
    proofs: res.proofs.map((p) => ({ kind: p.kind, outcome: p.outcome, detail: p.detail, ageAtWriteMs: p.ageAtWriteMs })),
  };
  switch (result) {
    case AgentResult.Delivered:
      return { ...base, outcome: "delivered", deliveryStage: "delivered", ...evidence };
    case AgentResult.Queued:
      return { ...base, outcome: "delivered", deliveryStage: "delivered", state: "queued", status: "queued_until_turn_end", ...evidence };
    case AgentResult.Steered:
      return { ...base, outcome: "delivered", deliveryStage: "delivered", state: "steered", ...evidence };
    case AgentResult.Started:
      return { ...base, outcome: "delivered", deliveryStage: "delivered", state: "started", ...evidence };
    case AgentResult.Unconfirmed:
      return { ...base, outcome: "unconfirmed", deliveryStage: "uncertain", ...evidence };
    case AgentResult.Rejected:
      return { ...base, outcome: "undelivered", deliveryStage: "rejected", ...evidence };
    case AgentResult.NotSent:
      return { ...base, outcome: "undelivered", deliveryStage: "unavailable", ...evidence };
    default:
      return { ...base, outcome: "unconfirmed", deliveryStage: "uncertain", ...evidence, detail: `the agent answered with an unknown result ${res.result}; treated as unconfirmed` };
  }
}

function outcomeFromAgent(res: DeliverResponse): DeliveryOutcome {
  const result = agentResultWire.decode(res.result) ?? AgentResult.Unconfirmed;
  const state = (
    {
      delivered: ReceiptState.Delivered,
      queued: ReceiptState.Queued,
      steered: ReceiptState.Steered,
      started: ReceiptState.Started,
      not_sent: ReceiptState.NotSent,
      rejected: ReceiptState.Rejected,
      unconfirmed: ReceiptState.Unconfirmed,
    } as const
  )[result];
  return {
    state,
    reason: res.reason || undefined,
    detail: res.detail,
    nativeReceiptId: res.nativeReceiptId || undefined,
    proofAgeMs: res.proofAgeMs,
    proofs: res.proofs.map((p) => ({ kind: p.kind, outcome: p.outcome, detail: p.detail, ageAtWriteMs: p.ageAtWriteMs })),
  };
}

async function settle(deps: PipelineDeps, id: string, body: MessageSeatBody, outcome: DeliveryOutcome): Promise<ToolOutcome> {
  const now = deps.now();
  try {
    await deps.db.transaction(async (tx) => {
      await settleDelivery(tx, id, outcome, now);
      await settleCall(tx, id, CallState.Settled, body, now);
    });
  } catch (e) {
    // The effect happened (or was definitely refused) but the journal could not record
    // it: the lead gets uncertainty, and reconciliation reads the seat later.
    deps.logger.error("settle failed", { deliveryId: id, error: (e as Error).message });
    return { id, tool: MESSAGE_SEAT, state: "uncertain", body: uncertainBody(MESSAGE_SEAT, id, `the outcome (${body.outcome}) could not be recorded: ${(e as Error).message}`), isError: true };
  }
  deps.onJournalChange();
  return { id, tool: MESSAGE_SEAT, state: "settled", body, isError: false };
}

async function settleUncertain(deps: PipelineDeps, id: string, detail: string): Promise<ToolOutcome> {
  const body = uncertainBody(MESSAGE_SEAT, id, detail);
  try {
    await deps.db.transaction(async (tx) => {
      await settleDelivery(tx, id, { state: ReceiptState.Uncertain, reason: "answer_lost", detail }, deps.now());
      await settleCall(tx, id, CallState.Uncertain, body, deps.now());
    });
    deps.onJournalChange();
  } catch (e) {
    deps.logger.error("could not record uncertainty", { deliveryId: id, error: (e as Error).message });
  }
  return { id, tool: MESSAGE_SEAT, state: "uncertain", body, isError: true };
}
