/**
 * The owner's settle of an unresolved hire (clankie hire-receipt settle, rule 53):
 * `not-launched` only when a fresh census — taken after the agent sealed the id, so no late
 * request can launch it — proves the reservation preceded every effect: no pane, process
 * or session from it exists and the host journal never committed a launch. Otherwise it is
 * refused and `abandoned-unknown` keeps the evidence. Either way the id is refused forever.
 */
import { and, eq } from "drizzle-orm";
import { hireReceipts } from "../db/schema.js";
import { CallState, findCall, settleCall } from "../journal/call-receipts.js";
import { assertLeaseHeld } from "../journal/lease-guard.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { parseUuid } from "../../shared/ids.js";
import { quoteInput } from "../../shared/public-text.js";
import { HireState, UNRESOLVED_HIRE_STATES, type HireBody } from "./bodies.js";
import { censusEvidence, hireCensus, notLaunchedRefusal, provesNoLaunch, type CensusDeps } from "./census.js";
import type { HireJournal } from "./hire-record.js";

export type HireDisposition = "not-launched" | "abandoned-unknown";

/** The owner's settle reads and writes the journal under this replica's lease and takes a census. */
export type SettleHireDeps = Pick<HireJournal, "db" | "now" | "lease" | "onJournalChange"> & CensusDeps;

export async function settleHire(
  deps: SettleHireDeps,
  givenId: string,
  conversationId: string,
  disposition: string,
): Promise<{ state: string; detail: string }> {
  if (disposition !== "not-launched" && disposition !== "abandoned-unknown")
    throw new InvalidArgumentError("disposition must be not-launched or abandoned-unknown");
  const id = parseUuid("the hire id", givenId);
  const [hire] = await deps.db
    .select()
    .from(hireReceipts)
    .where(and(eq(hireReceipts.id, id), eq(hireReceipts.conversationId, conversationId)));
  if (!hire)
    return {
      state: "refused",
      detail: `no hire ${id} exists in conversation ${quoteInput(conversationId)}; nothing was changed`,
    };
  if (!UNRESOLVED_HIRE_STATES.includes(hire.state as HireState))
    return { state: "refused", detail: `hire ${id} is already ${hire.state}; nothing was changed` };
  const call = await findCall(deps.db, id, conversationId);
  if (call?.state === CallState.InFlight)
    return {
      state: "refused",
      detail: `hire ${id} is still in flight on ${hire.machine}; wait for its answer or reconcile it`,
    };

  // Seal first, then observe: a request still on its way to the agent can no longer launch.
  const census = await hireCensus(deps, hire.machine, id, true);
  const now = deps.now();
  const base = { schemaVersion: 1 as const, hireId: id, machine: hire.machine, harness: hire.harness };
  let state: HireState;
  let evidence: Record<string, unknown>;
  let detail: string;
  if (disposition === "not-launched") {
    if (!census.ok)
      return {
        state: "refused",
        detail: `no fresh census of ${hire.machine} could be taken (${census.detail}); not-launched needs one. Settle abandoned-unknown to keep the evidence instead`,
      };
    if (!provesNoLaunch(census.census))
      return { state: "refused", detail: notLaunchedRefusal(hire.machine, id, census.census) };
    // Rule 53: the agent's own answer that the launch committed is irreversible; a census that finds
    // nothing now (a host journal reset, a reinstalled agent) cannot make it not-launched.
    if (hire.evidence?.launchCommitted === true) {
      return {
        state: "refused",
        detail: `the agent on ${hire.machine} answered that hire ${id} launched (launchCommitted), and that cannot be undone whatever its host journal says now; settle abandoned-unknown instead`,
      };
    }
    state = HireState.SettledNotLaunched;
    evidence = {
      receiptId: id,
      fingerprint: hire.fingerprint,
      target: { host: hire.machine },
      window: { openedAt: hire.createdAt.toISOString(), sealedAt: now.toISOString() },
      census: censusEvidence(census.census),
      journal: "reserved-to-sealed-without-launch",
    };
    detail = `hire ${id} never launched on ${hire.machine} (fresh census after the seal); its id stays refused. New work needs freshIntent{id, afterReceiptId: "${id}"}`;
  } else {
    state = HireState.AbandonedUnknown;
    evidence = {
      receiptId: id,
      fingerprint: hire.fingerprint,
      priorState: hire.state,
      abandonedAt: now.toISOString(),
      census: census.ok ? censusEvidence(census.census) : { unavailable: census.detail },
    };
    detail = `hire ${id} is abandoned-unknown: its evidence is kept and it is never launched again. New work needs freshIntent{id, afterReceiptId: "${id}"}`;
  }
  const body: HireBody = {
    ...base,
    outcome: "failed",
    reason: state === HireState.SettledNotLaunched ? "settled_not_launched" : "abandoned_unknown",
    detail,
    freshIntentAllowed: true,
    ...(hire.seatId ? { seat: hire.seatId } : {}),
  };
  await deps.db.transaction(async (tx) => {
    // Written only while this replica's lease is live (ADR 0036).
    await assertLeaseHeld(tx, deps.lease.fence(), `the owner's settle of hire ${id}`);
    await tx
      .update(hireReceipts)
      .set({ state, evidence: { ...(hire.evidence ?? {}), settle: evidence }, updatedAt: now, settledAt: now })
      .where(eq(hireReceipts.id, id));
    await settleCall(tx, id, CallState.Settled, body, now);
  });
  deps.onJournalChange();
  return { state, detail };
}
