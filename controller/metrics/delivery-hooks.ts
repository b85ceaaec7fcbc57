/** The calls the lead tools make per answer: message_seat (outcome, latency, proof age) and hire_agent (outcome). */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { DeliveryMetrics } from "./fleet-metrics.js";

/** Records the answer and returns it unchanged. `startedAt` is performance.now() at the call's arrival. */
export function observeMessageSeat(
  metrics: DeliveryMetrics | undefined,
  startedAt: number,
  result: CallToolResult,
): CallToolResult {
  if (!metrics) return result;
  const body = (result.structuredContent ?? {}) as {
    outcome?: unknown;
    reason?: unknown;
    deliveryStage?: unknown;
    proofAgeMs?: unknown;
  };
  const outcome = typeof body.outcome === "string" ? body.outcome : "unknown";
  const sent = outcome === "delivered" || outcome === "unconfirmed";
  metrics.messageSeatAnswered(
    outcome,
    (performance.now() - startedAt) / 1000,
    sent && typeof body.proofAgeMs === "number" ? body.proofAgeMs : undefined,
  );
  // A refusal before any receipt (no stage) failed at admission; one with a stage, inside the seat's turn.
  if (body.reason === "journal_unavailable") metrics.journalError(body.deliveryStage ? "before_dispatch" : "admit");
  return result;
}

/**
 * Records a hire_agent answer by outcome: spawned, failed, uncertain (start_unconfirmed or
 * delivery_unconfirmed: reconcile it), or the refusal word of an error (invalid_argument,
 * unavailable, refused). Returns the answer unchanged.
 */
export function observeHire(metrics: DeliveryMetrics | undefined, result: CallToolResult): CallToolResult {
  if (!metrics) return result;
  const body = (result.structuredContent ?? {}) as { outcome?: unknown; deliveryStage?: unknown };
  const word = typeof body.outcome === "string" ? body.outcome : "unknown";
  const outcome = body.deliveryStage === "uncertain" ? "uncertain" : word;
  metrics.hireAnswered(outcome);
  return result;
}
