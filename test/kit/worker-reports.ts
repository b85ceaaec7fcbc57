/**
 * What a lead reads with worker_reports (rule 48, rule 50): the one reader the suites share, so
 * every test checks "who got the report" the same way.
 */
import type { LeadClient } from "./mcp-client.js";

export type WorkerReport = { deliveryId: string; seat: string; text: string; unadopted: boolean };

/** The last 100 reports this lead's conversation may read. */
export async function reportsOf(lead: LeadClient): Promise<WorkerReport[]> {
  return ((await lead.call("worker_reports", { limit: 100 })).structuredContent?.reports ?? []) as WorkerReport[];
}
