/**
 * hire_agent, the controller's half: admission, then one HireSeat call to the machine's
 * agent, then the settle. In one transaction, before any effect: the operator call receipt
 * (a repeated id returns the original and never launches again) and the hire receipt
 * (id, conversation, fingerprint of the arguments, never their text). Once the HireSeat
 * request may have reached the agent, a lost answer is start_unconfirmed: reconcile it,
 * never hire it again (ADR 0213, rules 52–53).
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { and, eq } from "drizzle-orm";
import { HireSeatRequestSchema, type HireSeatResponse } from "../../shared/gen/clankie/fleet/v1/hire_pb.js";
import { callFingerprint } from "../../shared/fingerprint.js";
import { newDeliveryId, parseOptionalUuid, parseUuid } from "../../shared/ids.js";
import { assertWellFormedText } from "../../shared/well-formed-text.js";
import { InvalidArgumentError, JournalUnavailableError, ServiceStoppingError } from "../../shared/errors.js";
import { seatKindWire } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { transactionLate } from "../db/transaction-late.js";
import { hireReceipts, machines, type Machine } from "../db/schema.js";
import { admitCall, CallState, settleCall } from "../journal/call-receipts.js";
import { isFencedWrite, leaseHeld, type InstanceEpoch } from "../journal/lease-guard.js";
import { leaseLostRefusal, type InstanceLease } from "../fleet/instance-lease.js";
import type { Registry } from "../nodes/registry.js";
import type { AgentClients } from "../nodes/agent-clients.js";
import type { FaultPoints } from "../delivery/faults.js";
import type { UnrecordedOutcomes } from "../delivery/unrecorded-outcomes.js";
import type { DeliveryMetrics } from "../metrics/fleet-metrics.js";
import type { LeadBody, ToolOutcome } from "../delivery/result-bodies.js";
import { admittedHere, replayAdmission } from "../delivery/replay.js";
import { JournalNoAnswerError } from "../db/answer-deadline.js";
import { journalCause } from "../db/error-text.js";
import { HIRE_AGENT, type HireAgentInput } from "./args.js";
import { HireState, SETTLED_ORIGINAL_STATES, unconfirmedBody, type HireBody } from "./bodies.js";
import { bodyFromAgent, hireStateOf, record, unansweredRefusal, type HireJournal } from "./hire-record.js";

/** The agent's 30 s readiness, its brief delivery and the link: past this the answer is lost. */
export const HIRE_TIMEOUT_MS = 75_000;

/** What hire_agent uses, built once in controller/main.ts: the journal, the agents, the registry's view of machines. */
export interface HireDeps extends HireJournal {
  agents: AgentClients;
  registry: Registry;
  lease: Pick<InstanceLease, "fence" | "holds" | "isServing">;
  unrecorded: Pick<UnrecordedOutcomes, "add" | "flush">;
  isStopping: () => boolean;
  /** Aborted when the controller stops: a HireSeat call in flight then answers start_unconfirmed. */
  shutdownSignal: AbortSignal;
  /** Registers an in-flight launch so a stop can wait for it. */
  track: <T>(p: Promise<T>) => Promise<T>;
  hireTimeoutMs?: number | undefined;
  hooks?: { faults?: FaultPoints | undefined; metrics?: DeliveryMetrics | undefined } | undefined;
}

export interface HireScope {
  conversationId: string;
  /** From `_meta["clankie/seat-call"].hireId`, when the caller minted one. */
  hireId?: string | undefined;
}

/** Agent errors raised only before anything was launched. */
const REFUSED_BEFORE_LAUNCH = new Set([
  Code.InvalidArgument,
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.NotFound,
  Code.FailedPrecondition,
  Code.Unimplemented,
  Code.AlreadyExists,
]);

type Plan =
  | { kind: "replay"; outcome: ToolOutcome }
  | { kind: "settled"; body: HireBody }
  | { kind: "launch"; machine: Machine };

/** The shared replay names a delivery id; a hire names its hire id. */
function namedByHire(body: LeadBody, id: string): LeadBody {
  if (body.outcome === "uncertain") {
    const { deliveryId: _d, ...rest } = body;
    return { ...rest, hireId: id };
  }
  if (body.outcome === "refused" || body.outcome === "expired" || body.outcome === "no_matching_receipt") {
    const { deliveryId: _d, ...rest } = body;
    return { ...rest, hireId: id };
  }
  return body;
}

function settledOutcome(id: string, body: HireBody): ToolOutcome {
  return { id, tool: HIRE_AGENT, state: "settled", body, isError: body.outcome !== "spawned" };
}

async function chooseMachine(
  tx: Parameters<Parameters<Db["transaction"]>[0]>[0],
  registry: Registry,
  wanted: string | undefined,
): Promise<Machine | { reason: "unknown_machine" | "machine_offline"; detail: string }> {
  const all = await tx.select().from(machines);
  if (wanted) {
    const m = all.find((x) => x.name === wanted);
    if (!m)
      return { reason: "unknown_machine", detail: `no machine named ${wanted} is registered; nothing was launched` };
    if (!registry.isOnline(m))
      return { reason: "machine_offline", detail: `${wanted}'s agent is offline; nothing was launched` };
    return m;
  }
  const online = all.filter((m) => registry.isOnline(m));
  if (online.length === 1) return online[0]!;
  return {
    reason: online.length === 0 ? "machine_offline" : "unknown_machine",
    detail:
      online.length === 0
        ? "no machine is online; nothing was launched"
        : `name the machine (online: ${online.map((m) => m.name).join(", ")}); nothing was launched`,
  };
}

export async function hireAgent(deps: HireDeps, scope: HireScope, given: HireAgentInput): Promise<ToolOutcome> {
  if (deps.isStopping()) throw new ServiceStoppingError();
  if (!deps.lease.isServing()) throw leaseLostRefusal("reserved or launched");
  // The edge (issue 32 items 4, 7): ids canonical before the fingerprint and the journal; text
  // the launch would change is refused.
  const hireId = parseOptionalUuid(`_meta["clankie/seat-call"].hireId`, scope.hireId);
  const fresh = given.freshIntent;
  const input: HireAgentInput = fresh
    ? {
        ...given,
        freshIntent: {
          id: parseUuid("freshIntent.id", fresh.id),
          afterReceiptId: parseUuid("freshIntent.afterReceiptId", fresh.afterReceiptId),
        },
      }
    : given;
  for (const what of ["workingDirectory", "title", "role", "brief"] as const) {
    if (input[what] !== undefined) assertWellFormedText(what, input[what]);
  }
  if (hireId && input.freshIntent && hireId !== input.freshIntent.id) {
    throw new InvalidArgumentError("_meta hireId and freshIntent.id must be the same id");
  }
  const id = hireId ?? input.freshIntent?.id ?? newDeliveryId();
  const fingerprint = callFingerprint(HIRE_AGENT, input);
  const now = deps.now();
  const fence = deps.lease.fence();

  let plan: Plan;
  try {
    // Bounded like the deliveries' admission (ADR 0033): a database that answers nothing is
    // refused within the deadline, and the refusal is recorded by id (on disk first, before the
    // lead hears it), so a reservation the database commits after that — before this process
    // dies or after — is settled failed, never launched (the lead was told nothing would be).
    plan = await transactionLate(
      deps.db,
      async (tx) => {
        const admission = await admitCall(tx, {
          id,
          tool: HIRE_AGENT,
          conversationId: scope.conversationId,
          fingerprint,
          fence,
        });
        if (admission.kind !== "admitted") {
          const replay = replayAdmission(HIRE_AGENT, id, admission);
          return { kind: "replay", outcome: { ...replay, body: namedByHire(replay.body, id) } } as const;
        }
        const chosen = await chooseMachine(tx, deps.registry, input.machine);
        const machineName = "name" in chosen ? chosen.name : (input.machine ?? "");
        const base = { schemaVersion: 1 as const, hireId: id, machine: machineName, harness: input.harness };
        const refuse = async (reason: HireBody["reason"], detail: string): Promise<Plan> => {
          const body: HireBody = { ...base, outcome: "failed", reason, detail, launchCommitted: false };
          await tx.insert(hireReceipts).values({
            id,
            conversationId: scope.conversationId,
            fingerprint,
            machine: machineName,
            harness: input.harness,
            state: HireState.Failed,
            reason: reason ?? null,
            createdAt: now,
            updatedAt: now,
            settledAt: now,
          });
          await settleCall(tx, id, CallState.Settled, body, now);
          return { kind: "settled", body };
        };
        if (input.freshIntent) {
          const [original] = await tx
            .select()
            .from(hireReceipts)
            .where(
              and(
                eq(hireReceipts.id, input.freshIntent.afterReceiptId),
                eq(hireReceipts.conversationId, scope.conversationId),
              ),
            );
          if (!original)
            return refuse(
              "fresh_intent_refused",
              `no hire ${input.freshIntent.afterReceiptId} exists in this conversation; nothing was launched`,
            );
          if (!SETTLED_ORIGINAL_STATES.includes(original.state as HireState)) {
            return refuse(
              "fresh_intent_refused",
              `hire ${original.id} is ${original.state}, not settled; reconcile or settle it first (clankie hire-receipt settle). Nothing was launched`,
            );
          }
          const [taken] = await tx
            .select({ id: hireReceipts.id })
            .from(hireReceipts)
            .where(eq(hireReceipts.afterReceiptId, original.id));
          if (taken)
            return refuse(
              "fresh_intent_refused",
              `hire ${original.id} was already followed by fresh intent ${taken.id}; nothing was launched`,
            );
        }
        if (!("name" in chosen)) return refuse(chosen.reason, chosen.detail);
        await tx.insert(hireReceipts).values({
          id,
          conversationId: scope.conversationId,
          fingerprint,
          machine: chosen.name,
          harness: input.harness,
          state: HireState.Reserved,
          freshIntentId: input.freshIntent?.id ?? null,
          afterReceiptId: input.freshIntent?.afterReceiptId ?? null,
          createdAt: now,
          updatedAt: now,
        });
        return { kind: "launch", machine: chosen } as const;
      },
      (late) => {
        if (late.kind === "launch")
          deps.logger.warn(
            "a hire reservation committed after its call was refused; settling it failed, never launched",
            { hireId: id },
          );
        void deps.unrecorded.flush().then(() => deps.onJournalChange());
      },
    );
  } catch (e) {
    if (isFencedWrite(e)) throw leaseLostRefusal("reserved or launched");
    if (e instanceof JournalNoAnswerError) {
      // Not for a replay of an id admitted here and still launching: it reserved nothing of its own.
      if (!admittedHere(deps).has(id))
        deps.unrecorded.add(
          `refused hire ${id} (failed)`,
          unansweredRefusal(deps, { id, conversationId: scope.conversationId, fingerprint }, input),
        );
      throw new JournalUnavailableError(
        `the receipt journal did not answer, so nothing was launched, and nothing will be for this id: ${journalCause(e)}`,
        e,
      );
    }
    throw new JournalUnavailableError(
      `the receipt journal could not be written, so nothing was launched: ${journalCause(e)}`,
      e,
    );
  }
  deps.onJournalChange();
  if (plan.kind === "replay") return plan.outcome;
  if (plan.kind === "settled") return settledOutcome(id, plan.body);
  admittedHere(deps).add(id);
  const launched = launch(deps, scope, id, fingerprint, input, plan.machine, fence).finally(() =>
    admittedHere(deps).delete(id),
  );
  return deps.track(launched);
}

async function launch(
  deps: HireDeps,
  scope: HireScope,
  id: string,
  fingerprint: string,
  input: HireAgentInput,
  machine: Machine,
  fence: InstanceEpoch,
): Promise<ToolOutcome> {
  const base = { schemaVersion: 1 as const, hireId: id, machine: machine.name, harness: input.harness };
  const settle = (body: HireBody, state: HireState, committed = false) =>
    record(deps, id, body, state, committed, fence);
  // Reserved and not yet launching: where the suites park a hire in flight.
  await deps.hooks?.faults?.at("hang_after_hire_admit");
  const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
  if (!(await conn.connect())) {
    return settle(
      {
        ...base,
        outcome: "failed",
        reason: "machine_offline",
        detail: `the agent on ${machine.name} could not be reached at ${machine.endpoint}; nothing was launched`,
        launchCommitted: false,
      },
      HireState.Failed,
    );
  }
  try {
    // Only from reserved: this write, if it lands after the settle below, must not undo it. Fenced
    // (ADR 0036): nothing is launched unless this instance still surely holds the admitting epoch.
    const launching = await deps.db
      .update(hireReceipts)
      .set({ state: HireState.Launching, updatedAt: deps.now() })
      .where(and(eq(hireReceipts.id, id), eq(hireReceipts.state, HireState.Reserved), leaseHeld(fence)))
      .returning({ id: hireReceipts.id });
    if (launching.length === 0 || !deps.lease.holds(fence.epoch)) {
      return settle(
        {
          ...base,
          outcome: "failed",
          reason: "journal_unavailable",
          detail:
            "this controller replica no longer surely held its instance lease (or the reservation was settled meanwhile), so nothing was launched",
          launchCommitted: false,
        },
        HireState.Failed,
      );
    }
  } catch (e) {
    return settle(
      {
        ...base,
        outcome: "failed",
        reason: "journal_unavailable",
        detail: `the receipt journal could not be written before the launch (${journalCause(e)}), so nothing was launched`,
        launchCommitted: false,
      },
      HireState.Failed,
    );
  }
  let res: HireSeatResponse;
  try {
    res = await conn.client.hireSeat(
      create(HireSeatRequestSchema, {
        hireId: id,
        fingerprint,
        harness: seatKindWire.encode(input.harness),
        workingDirectory: input.workingDirectory,
        title: input.title,
        role: input.role,
        brief: input.brief ?? "",
        model: input.model ?? "",
        effort: input.effort ?? "",
        conversationId: scope.conversationId,
      }),
      { timeoutMs: deps.hireTimeoutMs ?? HIRE_TIMEOUT_MS, signal: deps.shutdownSignal },
    );
    // The agent acted and answered; the suites lose that answer here, as a cut link would.
    if (deps.hooks?.faults?.drops?.("drop_hire_answer"))
      throw new ConnectError("the agent's answer was dropped at the drop_hire_answer fault point", Code.Unavailable);
  } catch (e) {
    const err = ConnectError.from(e);
    if (REFUSED_BEFORE_LAUNCH.has(err.code)) {
      return settle(
        {
          ...base,
          outcome: "failed",
          reason: "agent_refused",
          detail: `the agent refused the hire before launching anything: ${err.rawMessage}`,
          launchCommitted: false,
        },
        HireState.Failed,
      );
    }
    deps.logger.warn("hire unconfirmed", { hireId: id, machine: machine.name, error: err.message });
    const body = unconfirmedBody(
      base,
      "start_unconfirmed",
      `the hire may have reached the agent on ${machine.name} but its answer was lost (${Code[err.code]}: ${err.rawMessage}); it will never be launched again. Reconcile it with reconcile_seat_call({hireId}).`,
    );
    return settle(body, HireState.StartUnconfirmed);
  }
  const body = bodyFromAgent(base, res);
  const state = hireStateOf(body);
  // Bounded like every journal write (a late one is harmless): the agent's own seat reports bring the seat in too.
  if (res.seat)
    await deps.registry
      .upsertSeat(machine.name, res.seat)
      .catch((e: Error) => deps.logger.warn("hired seat not recorded yet", { hireId: id, error: e.message }));
  return settle(body, state, res.launchCommitted);
}
