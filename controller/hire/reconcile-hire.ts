/**
 * reconcile_seat_call({hireId}): reads the original hire in its own conversation only and
 * never launches. A settled original returns its result. An unresolved one asks the
 * machine's agent for a read-only census: a hire its host journal finished is recorded
 * with the agent's answer (evidence, not a launch); otherwise it stays uncertain with what
 * the census saw.
 */
import { and, eq } from "drizzle-orm";
import { hireReceipts } from "../db/schema.js";
import { CallState, findCall } from "../journal/call-receipts.js";
import type { ToolOutcome } from "../delivery/result-bodies.js";
import { HIRE_AGENT } from "./args.js";
import { unconfirmedBody, type HireBody } from "./bodies.js";
import { censusEvidence, hireCensus, type CensusDeps } from "./census.js";
import { bodyFromAgent, hireStateOf, record, type HireJournal } from "./hire-record.js";

/** A hire call's stored result: the HireBody its settle wrote (JSON from the journal). */
const storedBody = (result: Record<string, unknown>): HireBody => result as unknown as HireBody;

export async function reconcileHire(
  deps: HireJournal & CensusDeps,
  conversationId: string,
  id: string,
): Promise<ToolOutcome> {
  const noMatch: ToolOutcome = {
    id,
    tool: HIRE_AGENT,
    state: "settled",
    isError: true,
    body: {
      schemaVersion: 1,
      outcome: "no_matching_receipt",
      hireId: id,
      detail: "no hire with this id exists in this conversation; nothing was changed",
    },
  };
  const call = await findCall(deps.db, id, conversationId);
  if (!call || call.tool !== HIRE_AGENT) return noMatch;
  const [hire] = await deps.db
    .select()
    .from(hireReceipts)
    .where(and(eq(hireReceipts.id, id), eq(hireReceipts.conversationId, conversationId)));
  if (call.state === CallState.Settled) {
    if (call.resultExpired || !call.result)
      return {
        id,
        tool: HIRE_AGENT,
        state: "settled",
        isError: true,
        body: {
          schemaVersion: 1,
          outcome: "expired",
          hireId: id,
          detail: "this hire was settled and its result body has expired; it is never launched again",
        },
      };
    return {
      id,
      tool: HIRE_AGENT,
      state: "settled",
      isError: call.result.outcome !== "spawned",
      body: storedBody(call.result),
    };
  }
  const base = { hireId: id, machine: hire?.machine ?? "", harness: hire?.harness ?? "" };
  if (call.state === CallState.InFlight || !hire) {
    return {
      id,
      tool: HIRE_AGENT,
      state: "uncertain",
      isError: true,
      body: unconfirmedBody(
        base,
        "start_unconfirmed",
        "this hire is still in flight; reconcile it again shortly. Nothing was launched again.",
      ),
    };
  }
  const census = await hireCensus(deps, hire.machine, id, false);
  if (!census.ok) {
    return {
      id,
      tool: HIRE_AGENT,
      state: "uncertain",
      isError: true,
      body: {
        ...(call.result ? storedBody(call.result) : unconfirmedBody(base, "start_unconfirmed", "unknown")),
        censusCheck: census.detail,
      },
    };
  }
  const c = census.census;
  if (c.journalState === "finished" && c.recorded) {
    // The host journal holds the agent's own answer: record it as the original's result.
    const body: HireBody = {
      ...bodyFromAgent({ schemaVersion: 1, ...base }, c.recorded),
      recoveredFrom: "host_journal",
    };
    // The seat itself reaches the registry through the agent's own seat reports.
    return record(deps, id, body, hireStateOf(body));
  }
  const detail =
    c.journalState === "launch_committed"
      ? `the agent on ${hire.machine} committed the launch and has not finished it (panes ${c.panes.join(", ") || "none"}, processes ${c.processes.join(", ") || "none"}); it is never launched again`
      : `the agent on ${hire.machine} holds this hire as ${c.journalState} (panes ${c.panes.join(", ") || "none"}, processes ${c.processes.join(", ") || "none"}); it is never launched again`;
  return {
    id,
    tool: HIRE_AGENT,
    state: "uncertain",
    isError: true,
    body: {
      ...(call.result ? storedBody(call.result) : unconfirmedBody(base, "start_unconfirmed", detail)),
      censusCheck: detail,
      census: censusEvidence(c),
    },
  };
}
