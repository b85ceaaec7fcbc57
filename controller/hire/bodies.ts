/** Hire receipt states and the uncertain hire body; the lead-facing hire bodies are typed in shared/delivery-bodies.ts. */
import { RECONCILE_TOOL, type HireBody } from "../../shared/delivery-bodies.js";

export type { HireBody, HireOutcome, HireReason } from "../../shared/delivery-bodies.js";

/** Hire receipt states (P/hire-receipts, adapted): unresolved until spawned, failed or settled. */
export const HireState = {
  Reserved: "reserved",
  Launching: "launching",
  Spawned: "spawned",
  Failed: "failed",
  StartUnconfirmed: "start_unconfirmed",
  DeliveryUnconfirmed: "delivery_unconfirmed",
  SettledNotLaunched: "settled-not-launched",
  AbandonedUnknown: "abandoned-unknown",
} as const;
export type HireState = (typeof HireState)[keyof typeof HireState];

export const UNRESOLVED_HIRE_STATES: readonly HireState[] = [
  HireState.Reserved,
  HireState.Launching,
  HireState.StartUnconfirmed,
  HireState.DeliveryUnconfirmed,
];
/** States a fresh intent may follow: the original is settled and can never launch. */
export const SETTLED_ORIGINAL_STATES: readonly HireState[] = [HireState.SettledNotLaunched, HireState.AbandonedUnknown];

/** What the owner can do about an unresolved hire; the id itself is never launched again. */
function unresolvedFix(reason: "start_unconfirmed" | "delivery_unconfirmed", hireId: string): string {
  return reason === "start_unconfirmed"
    ? `reconcile_seat_call({hireId}) reads what the machine holds of it; the owner settles it with \`clankie hire-receipt settle ${hireId} not-launched\` (accepted only when a fresh census proves nothing launched) or \`abandoned-unknown\``
    : `the seat is up and the brief is never written again: look at the seat to see whether it arrived, message_seat it if not, then the owner settles the receipt with \`clankie hire-receipt settle ${hireId} abandoned-unknown\``;
}

/** A hire whose fate is unknown: uncertain to the lead, never launched again. */
export function unconfirmedBody(
  base: Pick<HireBody, "hireId" | "machine" | "harness">,
  reason: "start_unconfirmed" | "delivery_unconfirmed",
  detail: string,
  extra: Partial<HireBody> = {},
): HireBody {
  const control = { reason, fix: unresolvedFix(reason, base.hireId) };
  return {
    schemaVersion: 1,
    outcome: "failed",
    ...base,
    reason,
    detail,
    deliveryStage: "uncertain",
    reconcileTool: RECONCILE_TOOL,
    launchCommitted: true,
    control,
    ...extra,
  };
}
