/**
 * message_seat{seat, questionAnswer{requestId, answers}}: the hiring lead answers a worker's
 * question (issue 13 part 4, rules 35 and 39). Only the conversation that hired the seat's
 * current occupant may answer — the same one its questions are filed for. The agent sends the
 * harness's native reply and says what its receipt proved; a lost answer is `uncertain` and is
 * never repeated here (the agent's ledger refuses any second answer to that question).
 *
 * The answer is a seat call like any message_seat (ADR 0050, "Question answers are seat-call
 * receipts"): its id (the caller's `deliveryId`, else one minted here), conversation and request
 * fingerprint are committed in the call receipt journal BEFORE the agent is asked, and the
 * result is settled there; so a same-id replay returns the original result without asking the
 * agent again, and reconcile_seat_call({deliveryId}) reads it. Only the journal's public
 * admission and settle functions are used.
 */
import { create } from "@bufbuild/protobuf";
import { and, eq, or } from "drizzle-orm";
import {
  AnswerQuestionRequestSchema,
  QuestionAnswerListSchema,
  type AnswerQuestionResponse,
} from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { ServiceStoppingError } from "../../shared/errors.js";
import { callFingerprint } from "../../shared/fingerprint.js";
import { assertSeatRef, newDeliveryId, parseUuid } from "../../shared/ids.js";
import { assertWellFormedText } from "../../shared/well-formed-text.js";
import { quoteInput } from "../../shared/public-text.js";
import { journalFailure } from "../db/error-text.js";
import { transactionLate } from "../db/transaction-late.js";
import { JournalNoAnswerError } from "../db/answer-deadline.js";
import type { RefusedAdmission } from "../journal/refused-admission.js";
import { admittedHere, replayAdmission } from "../delivery/replay.js";
import { machines, seats } from "../db/schema.js";
import { admitCall, CallState, findCallById, settleCall, type Admission } from "../journal/call-receipts.js";
import { isFencedWrite, type InstanceEpoch } from "../journal/lease-guard.js";
import { leaseLostRefusal } from "../fleet/instance-lease.js";
import { MESSAGE_SEAT, type CallScope } from "../delivery/pipeline.js";
import type { Db } from "../db/open.js";
import type { Logger } from "../../shared/logger.js";
import type { InstanceLease } from "../fleet/instance-lease.js";
import type { UnrecordedOutcomes } from "../delivery/unrecorded-outcomes.js";
import type { AgentClients } from "../nodes/agent-clients.js";
import type { FaultPoints } from "../delivery/faults.js";
import { RECONCILE_TOOL, uncertainBody, type LeadBody, type ToolOutcome } from "../delivery/result-bodies.js";
import { hiredBy } from "../hire/hiring-conversation.js";

/** What answering a worker's question uses: the journal under this replica's lease, the agents, the stop signal. */
export interface QuestionAnswerDeps {
  db: Db;
  now: () => Date;
  logger: Logger;
  onJournalChange: () => void;
  /** This controller process, named in a refusal it records. */
  instanceId: string;
  lease: Pick<InstanceLease, "fence" | "holds" | "isServing">;
  unrecorded: Pick<UnrecordedOutcomes, "add" | "flush">;
  agents: AgentClients;
  isStopping: () => boolean;
  shutdownSignal: AbortSignal;
  hooks?: { faults?: FaultPoints | undefined } | undefined;
}

export interface QuestionAnswerArgs {
  seat: string;
  questionAnswer: { requestId: string; answers: Record<string, { answers: string[] }> };
}

export interface AnswerBody extends Record<string, unknown> {
  schemaVersion: 1;
  seat: string;
  outcome: "delivered" | "unconfirmed" | "uncertain" | "undelivered" | "refused" | "unknown_seat" | "seat_offline";
  reason?: string;
  detail: string;
  requestId: string;
  deliveryId: string;
  nativeReceiptId?: string;
}

/** The answer as one seat call: admitted in the journal first, settled with what the agent proved. */
export async function answerWorkerQuestion(
  deps: QuestionAnswerDeps,
  scope: CallScope,
  args: QuestionAnswerArgs,
): Promise<ToolOutcome> {
  if (deps.isStopping()) throw new ServiceStoppingError();
  if (!deps.lease.isServing()) throw leaseLostRefusal("admitted or sent");
  const id = parseUuid(`_meta["clankie/seat-call"].deliveryId`, scope.deliveryId ?? newDeliveryId());
  assertSeatRef("seat", args.seat);
  for (const [question, { answers }] of Object.entries(args.questionAnswer.answers)) {
    answers.forEach((a, i) => assertWellFormedText(`answer ${i + 1} to question ${quoteInput(question)}`, a));
  }
  // The fingerprint covers the whole request: the same id with another answer is a conflict, never a second answer.
  const key = {
    id,
    tool: MESSAGE_SEAT,
    conversationId: scope.conversationId,
    fingerprint: callFingerprint(MESSAGE_SEAT, { seat: args.seat, questionAnswer: args.questionAnswer }),
    fence: deps.lease.fence(),
  };
  let admission: Admission;
  try {
    // Bounded like every admission (ADR 0033). The database may commit it after the refusal,
    // also after this process has died: the refusal is recorded by id (journal/refused-admission.ts).
    admission = await transactionLate(
      deps.db,
      (tx) => admitCall(tx, key),
      (late) => {
        if (late.kind === "admitted")
          deps.logger.warn("a question answer's admission committed after its call was refused; settling it not sent", {
            deliveryId: id,
          });
        void deps.unrecorded.flush().then(() => deps.onJournalChange());
      },
    );
  } catch (e) {
    if (isFencedWrite(e)) throw leaseLostRefusal("admitted or sent");
    deps.logger.warn("journal admission failed", { deliveryId: id, error: (e as Error).message });
    // On disk before the lead hears it, and retried until the journal has it.
    // Not for a replay of an id admitted here and still in flight: it inserted nothing of its own.
    if (e instanceof JournalNoAnswerError && !admittedHere(deps).has(id))
      deps.unrecorded.add(`refused question answer ${id} (not_sent)`, refusalOf(deps, key, args));
    throw journalFailure(e, "the receipt journal could not be written, so the answer was not sent");
  }
  deps.onJournalChange();
  // A repeated id: the original result (or in_use / conflict), and the agent is not asked again.
  if (admission.kind !== "admitted") return replayAdmission(MESSAGE_SEAT, id, admission);
  admittedHere(deps).add(id);
  try {
    return await answerAdmitted(deps, scope, id, args, key.fence);
  } finally {
    admittedHere(deps).delete(id);
  }
}

async function answerAdmitted(
  deps: QuestionAnswerDeps,
  scope: CallScope,
  id: string,
  args: QuestionAnswerArgs,
  fence: InstanceEpoch,
): Promise<ToolOutcome> {
  // ADR 0036: the answer is sent only while this instance surely holds the epoch it was admitted under.
  const body: AnswerBody = deps.lease.holds(fence.epoch)
    ? await askAgent(deps, scope.conversationId, id, args)
    : {
        schemaVersion: 1,
        seat: args.seat,
        outcome: "undelivered",
        reason: "lease_lost",
        detail:
          "this controller replica's instance lease was not surely live when the answer was about to be sent; nothing was sent",
        requestId: args.questionAnswer.requestId,
        deliveryId: id,
      };
  if (body.outcome === "uncertain") body.reconcileTool = RECONCILE_TOOL;
  // Only a lost answer stays open (uncertain): every other outcome is final for this id.
  const state = body.outcome === "uncertain" ? CallState.Uncertain : CallState.Settled;
  try {
    await settleCall(deps.db, id, state, body, deps.now(), { owner: fence, writer: fence });
    deps.onJournalChange();
  } catch (e) {
    if (isFencedWrite(e)) {
      // Refused for good: the lead hears the receipt as the fleet records it, never this replica's outcome over it.
      const call = await findCallById(deps.db, id).catch(() => undefined);
      if (call && call.state !== CallState.InFlight && call.result)
        return {
          id,
          tool: MESSAGE_SEAT,
          state: call.state === CallState.Settled ? "settled" : "uncertain",
          body: call.result as unknown as LeadBody,
          isError: true,
        };
      return {
        id,
        tool: MESSAGE_SEAT,
        state: "uncertain",
        isError: true,
        body: uncertainBody(
          MESSAGE_SEAT,
          id,
          "this controller replica lost its instance lease while the answer was in flight, so its outcome was not recorded; recovery marks it uncertain, and it is never resent",
        ),
      };
    }
    // The answer's fate is known but unrecorded: the receipt stays in flight (a replay answers
    // receipt_in_use, reconcile uncertain; the next start marks it uncertain). Never resent.
    deps.logger.warn("journal settle failed for a question answer", { deliveryId: id, error: (e as Error).message });
  }
  return {
    id,
    tool: MESSAGE_SEAT,
    state: state === CallState.Uncertain ? "uncertain" : "settled",
    body: body as unknown as LeadBody,
    isError: body.outcome !== "delivered",
  };
}

/** The refusal of an answer whose admission got no answer: not sent, and never will be for this id. */
function refusalOf(
  deps: QuestionAnswerDeps,
  key: { id: string; conversationId: string; fingerprint: string },
  args: QuestionAnswerArgs,
): RefusedAdmission {
  const detail =
    "the receipt journal did not answer this call's admission in time, so it was refused; the answer was not sent, and never will be for this id";
  const body: AnswerBody = {
    schemaVersion: 1,
    seat: args.seat,
    outcome: "undelivered",
    reason: "journal_unavailable",
    detail,
    requestId: args.questionAnswer.requestId,
    deliveryId: key.id,
  };
  return {
    kind: "refused_admission",
    id: key.id,
    tool: MESSAGE_SEAT,
    conversationId: key.conversationId,
    fingerprint: key.fingerprint,
    controllerInstance: deps.instanceId,
    body,
    reason: "journal_unavailable",
    detail,
    holder: null,
    now: deps.now(),
  };
}

async function askAgent(
  deps: QuestionAnswerDeps,
  conversationId: string,
  deliveryId: string,
  args: QuestionAnswerArgs,
): Promise<AnswerBody> {
  const { requestId, answers } = args.questionAnswer;
  const base = { schemaVersion: 1 as const, requestId, deliveryId };
  const found = await deps.db
    .select()
    .from(seats)
    .where(and(eq(seats.present, true), or(eq(seats.id, args.seat), eq(seats.name, args.seat))));
  if (found.length !== 1)
    return {
      ...base,
      seat: args.seat,
      outcome: "unknown_seat",
      detail: found.length
        ? "the name is ambiguous; use machine/name"
        : `no seat is named ${args.seat}; nothing was sent`,
    };
  const seat = found[0]!;
  const hire = await hiredBy(deps.db, seat.id, seat.occupantId);
  if (!hire || hire.conversationId !== conversationId) {
    return {
      ...base,
      seat: seat.id,
      outcome: "refused",
      reason: "not_authorized",
      detail: `only the conversation that hired ${seat.id}'s current occupant answers its questions; nothing was sent`,
    };
  }
  const [machine] = await deps.db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine)
    return {
      ...base,
      seat: seat.id,
      outcome: "seat_offline",
      detail: "the seat's machine is no longer registered; nothing was sent",
    };
  const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
  if (!(await conn.connect()))
    return {
      ...base,
      seat: seat.id,
      outcome: "seat_offline",
      detail: `the agent on ${machine.name} could not be reached; nothing was sent`,
    };
  const wire = Object.fromEntries(
    Object.entries(answers).map(([k, v]) => [k, create(QuestionAnswerListSchema, { answers: v.answers })]),
  );
  let res;
  try {
    res = await conn.client.answerQuestion(
      create(AnswerQuestionRequestSchema, {
        seatName: seat.name,
        occupantId: seat.occupantId,
        requestId,
        answers: wire,
        conversationId,
      }),
      { timeoutMs: 30_000, signal: deps.shutdownSignal },
    );
  } catch (e) {
    return {
      ...base,
      seat: seat.id,
      outcome: "uncertain",
      detail: `the answer may have reached the agent but its result was lost (${(e as Error).message}); it is never resent, and the worker's question refuses a second answer`,
    };
  }
  // A suite drops the agent's answer that did arrive, exactly as a link cut after the agent acted would.
  if (deps.hooks?.faults?.drops?.("drop_question_answer")) {
    return {
      ...base,
      seat: seat.id,
      outcome: "uncertain",
      detail:
        "the agent's answer was lost on the way back; it is never resent, and the worker's question refuses a second answer",
    };
  }
  return bodyFromAgent(base, seat.id, res);
}

/** The lead's body for what the agent's native receipt proved. */
export function bodyFromAgent(
  base: { schemaVersion: 1; requestId: string; deliveryId: string },
  seatId: string,
  res: AnswerQuestionResponse,
): AnswerBody {
  const seat = { id: seatId };
  const receipt = res.receiptCallId ? { nativeReceiptId: `${res.receiptTurnId}/${res.receiptCallId}` } : {};
  const reason = res.reason ? { reason: res.reason } : {};
  switch (res.result) {
    case "delivered":
      return {
        ...base,
        seat: seat.id,
        outcome: "delivered",
        ...receipt,
        detail: res.detail || "the worker's tool output is this answer (winning tool-output receipt)",
      };
    case "unconfirmed":
      return {
        ...base,
        seat: seat.id,
        outcome: "unconfirmed",
        ...reason,
        ...receipt,
        detail: res.detail || "the owner answered the question in the pane first; this answer did not reach the worker",
      };
    case "not_sent":
      return {
        ...base,
        seat: seat.id,
        outcome: "undelivered",
        ...reason,
        detail: res.detail || "the answer never left the agent",
      };
    case "refused":
      return {
        ...base,
        seat: seat.id,
        outcome: "refused",
        ...reason,
        detail: res.detail || `the agent refused the answer (${res.reason}); nothing was sent`,
      };
    default:
      return {
        ...base,
        seat: seat.id,
        outcome: "uncertain",
        ...reason,
        detail: res.detail || "the answer was sent, but no receipt shows whether it won; it is never resent",
      };
  }
}
