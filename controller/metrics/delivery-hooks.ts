/** The one call the message_seat tool makes per answer: outcome, latency and proof age from the body the lead gets. */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { DeliveryMetrics } from "./fleet-metrics.js";

/** Records the answer and returns it unchanged. `startedAt` is performance.now() at the call's arrival. */
export function observeMessageSeat(metrics: DeliveryMetrics | undefined, startedAt: number, result: CallToolResult): CallToolResult {
  if (!metrics) return result;
  const body = (result.structuredContent ?? {}) as { outcome?: unknown; reason?: unknown; deliveryStage?: unknown; proofAgeMs?: unknown };
  const outcome = typeof body.outcome === "string" ? body.outcome : "unknown";
  const sent = outcome === "delivered" || outcome === "unconfirmed";
  metrics.messageSeatAnswered(outcome, (performance.now() - startedAt) / 1000, sent && typeof body.proofAgeMs === "number" ? body.proofAgeMs : undefined);
  // A refusal before any receipt (no stage) failed at admission; one with a stage, inside the seat's turn.
  if (body.reason === "journal_unavailable") metrics.journalError(body.deliveryStage ? "before_dispatch" : "admit");
  return result;
}
