/**
 * What a hire leaves in the journal: the agent's answer in the lead's words, the hire and call
 * receipts settled together (or kept for the retry when the journal cannot take them), and the
 * refusal of a reservation the journal did not answer. hire-agent.ts and reconcile-hire.ts record
 * through here; nothing here launches.
 */
import type { HireSeatResponse } from "../../shared/gen/clankie/fleet/v1/hire_pb.js";
import { seatId } from "../../shared/ids.js";
import type { Logger } from "../../shared/logger.js";
import { deliveryModeWire } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import type { UnrecordedOutcomes } from "../delivery/unrecorded-outcomes.js";
import type { ToolOutcome } from "../delivery/result-bodies.js";
import type { InstanceLease } from "../fleet/instance-lease.js";
import { CallState, findCallById } from "../journal/call-receipts.js";
import { settleHireOutcome, type HireSettleParams } from "../journal/hire-outcome.js";
import { isFencedWrite, type InstanceEpoch } from "../journal/lease-guard.js";
import type { RefusedAdmission } from "../journal/refused-admission.js";
import { HIRE_AGENT, type HireAgentInput } from "./args.js";
import { HireState, unconfirmedBody, type HireBody } from "./bodies.js";

/** The journal as a hire writes it: under this replica's lease, with the retry of what it cannot take yet. */
export interface HireJournal {
  db: Db;
  now: () => Date;
  logger: Logger;
  onJournalChange: () => void;
  /** This controller process, named in a refusal it records. */
  instanceId: string;
  lease: Pick<InstanceLease, "fence">;
  unrecorded: Pick<UnrecordedOutcomes, "add">;
}

/** The hire receipt's state for the agent's answer. */
export function hireStateOf(body: HireBody): HireState {
  if (body.outcome === "spawned") return HireState.Spawned;
  if (body.reason === "delivery_unconfirmed") return HireState.DeliveryUnconfirmed;
  if (body.reason === "start_unconfirmed") return HireState.StartUnconfirmed;
  return HireState.Failed;
}

/** The agent's answer in the lead's words. */
export function bodyFromAgent(
  base: Pick<HireBody, "schemaVersion" | "hireId" | "machine" | "harness">,
  res: HireSeatResponse,
): HireBody {
  const seat = res.seat;
  const extra: Partial<HireBody> = {
    ...(seat ? { seat: seatId(base.machine, seat.name), occupantId: seat.occupantId } : {}),
    ...(seat?.inputCapabilities
      ? {
          inputCapabilities: {
            deliveryModes: seat.inputCapabilities.deliveryModes.map((m) => deliveryModeWire.decode(m) ?? "auto"),
            interrupt: seat.inputCapabilities.interrupt,
            nextTurnOnly: seat.inputCapabilities.nextTurnOnly,
          },
        }
      : {}),
    ...(res.paneId ? { paneId: res.paneId } : {}),
    ...(res.briefDeliveryId ? { brief: { mechanism: res.briefMechanism, deliveryId: res.briefDeliveryId } } : {}),
    ...(res.proofs.length
      ? {
          proofs: res.proofs.map((p) => ({
            kind: p.kind,
            outcome: p.outcome,
            detail: p.detail,
            ageAtWriteMs: p.ageAtWriteMs,
          })),
        }
      : {}),
    ...(res.controlReason || res.controlFix ? { control: { reason: res.controlReason, fix: res.controlFix } } : {}),
    launchCommitted: res.launchCommitted,
  };
  if (res.outcome === "spawned") return { ...base, outcome: "spawned", detail: res.detail, ...extra };
  if (res.reason === "start_unconfirmed" || res.reason === "delivery_unconfirmed")
    return unconfirmedBody(base, res.reason, res.detail, extra);
  return { ...base, outcome: "failed", reason: res.reason || "launch_failed", detail: res.detail, ...extra };
}

/**
 * Records the hire receipt and the call receipt together; an unresolved hire stays uncertain to the lead.
 * `fence`: the epoch that admitted a launch (its settle is that epoch's or nothing); absent when an
 * unresolved hire is settled by reconcile, which only needs this instance's lease live.
 */
export async function record(
  deps: HireJournal,
  id: string,
  body: HireBody,
  state: HireState,
  launchCommittedByAgent = false,
  fence?: InstanceEpoch,
): Promise<ToolOutcome> {
  const unresolved = state === HireState.StartUnconfirmed || state === HireState.DeliveryUnconfirmed;
  const params: HireSettleParams = {
    kind: "hire",
    id,
    state,
    unresolved,
    body,
    now: deps.now(),
    launchCommittedByAgent,
    fence,
  };
  try {
    // Bounded (ADR 0033): a settle that commits after its deadline is the same idempotent settle the retry makes.
    await settleHireOutcome(deps.db, params, fence ?? deps.lease.fence());
    deps.onJournalChange();
  } catch (e) {
    if (isFencedWrite(e)) {
      deps.logger.error(
        "hire settle refused: this replica's lease epoch is no longer live; the receipt stays as the fleet records it",
        { hireId: id, state },
      );
      const call = await findCallById(deps.db, id).catch(() => undefined);
      const recorded =
        call && call.state !== CallState.InFlight && call.result ? (call.result as unknown as HireBody) : undefined;
      if (recorded)
        return {
          id,
          tool: HIRE_AGENT,
          state: call!.state === CallState.Settled ? "settled" : "uncertain",
          body: recorded,
          isError: recorded.outcome !== "spawned",
        };
      return {
        id,
        tool: HIRE_AGENT,
        state: "uncertain",
        isError: true,
        body: unconfirmedBody(
          body,
          "start_unconfirmed",
          "this controller replica lost its instance lease while the hire was in flight, so its outcome was not recorded; recovery marks it uncertain, and it is never launched again",
        ),
      };
    }
    deps.logger.error("hire settle failed", { hireId: id, state, error: (e as Error).message });
    // Kept, spilled and retried with the dispatches' settles; nothing is launched again meanwhile.
    deps.unrecorded.add(`hire ${id} (${state})`, params);
    return {
      id,
      tool: HIRE_AGENT,
      state: "uncertain",
      isError: true,
      body: unconfirmedBody(
        body,
        "start_unconfirmed",
        `the hire's outcome (${body.outcome}) could not be recorded yet; it will be when the journal is back, and nothing is launched again`,
      ),
    };
  }
  return {
    id,
    tool: HIRE_AGENT,
    state: unresolved ? "uncertain" : "settled",
    body,
    isError: body.outcome !== "spawned",
  };
}

/**
 * A hire refused because its admission got no answer: failed, never launched, by id. Kept until
 * the journal takes it (journal/refused-admission.ts holds in either order with the admission).
 */
export function unansweredRefusal(
  deps: Pick<HireJournal, "instanceId" | "now">,
  key: { id: string; conversationId: string; fingerprint: string },
  input: HireAgentInput,
): RefusedAdmission {
  const detail =
    "the receipt journal did not answer this hire's admission in time, so it was refused; nothing was launched, and this id never will be";
  const body: HireBody = {
    schemaVersion: 1,
    hireId: key.id,
    machine: input.machine ?? "",
    harness: input.harness,
    outcome: "failed",
    reason: "journal_unavailable",
    detail,
    launchCommitted: false,
  };
  return {
    kind: "refused_admission",
    id: key.id,
    tool: HIRE_AGENT,
    conversationId: key.conversationId,
    fingerprint: key.fingerprint,
    controllerInstance: deps.instanceId,
    body: body as unknown as Record<string, unknown>,
    reason: "journal_unavailable",
    detail,
    holder: null,
    hireReceipt: { from: HireState.Reserved, to: HireState.Failed },
    now: deps.now(),
  };
}
