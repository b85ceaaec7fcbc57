/**
 * Rule 41: an OpenCode delivery's status, in the spec's words, and the one table that turns it
 * into the delivery stage the agent reports. pending (admitted to an idle session, no turn yet)
 * and busy (admitted while a turn runs) are stored; delivered (the prompted event began a turn
 * with it) is consumed; uncertain (the prompt left and its answer was lost) stays uncertain;
 * unbound (no live server or session for the seat, or it refused the prompt) is unavailable.
 */
import { AgentResult } from "../../../shared/verdicts.js";
import type { NativeStage } from "../adapter.js";

export type OpenCodeDeliveryStatus = "pending" | "busy" | "delivered" | "uncertain" | "unbound";

export const OPENCODE_STAGE: Readonly<Record<OpenCodeDeliveryStatus, NativeStage>> = Object.freeze({
  pending: "stored",
  busy: "stored",
  delivered: "consumed",
  uncertain: "uncertain",
  unbound: "unavailable",
});

/** The status a write's result shows; undefined for a pre-send refusal (rejected), which has no OpenCode status. */
export function openCodeStatus(result: AgentResult, running: boolean): OpenCodeDeliveryStatus | undefined {
  switch (result) {
    case AgentResult.Delivered:
    case AgentResult.Started:
      return "delivered";
    case AgentResult.Queued:
    case AgentResult.Steered:
      return running ? "busy" : "pending";
    case AgentResult.Unconfirmed:
      return "uncertain";
    case AgentResult.NotSent:
      return "unbound";
    default:
      return undefined;
  }
}
