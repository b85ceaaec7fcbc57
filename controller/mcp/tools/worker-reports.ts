/** The lead's worker_reports and acknowledge_worker_reports tools (ADR 0207, VUH-2410). */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Db } from "../../db/open.js";
import { acknowledgeReports, MAX_ACK_PER_CALL, offerReports, reportStatus } from "../../reports/worker-reports.js";
import { errorResult, plainResult } from "../tool-result.js";
import { readFailure } from "../../db/error-text.js";
import { canonicalRef } from "../../../shared/ids.js";
import { acknowledgeResult, reportStatusResult, workerReportsResult } from "../output-schemas.js";

/** The reports read and acknowledge rows of the journal at the clock's time; nothing else. */
export interface WorkerReportDeps {
  db: Db;
  now: () => Date;
}

export function registerWorkerReports(server: McpServer, deps: WorkerReportDeps, conversationId: string): void {
  server.registerTool(
    "worker_reports",
    {
      title: "Worker reports",
      description:
        "Unread reports from workers whose seats this conversation hired or messaged, oldest first. Acknowledge them once read.",
      inputSchema: z.object({ limit: z.number().int().min(1).max(100).optional() }).strict(),
      outputSchema: workerReportsResult,
      // Reading marks reports as offered to this conversation, nothing else: read-only to the lead.
      annotations: { title: "Worker reports", readOnlyHint: true, idempotentHint: false, openWorldHint: false },
    },
    async ({ limit }) => {
      try {
        return plainResult({
          schemaVersion: 1,
          reports: await offerReports(deps.db, conversationId, limit ?? 20, deps.now()),
        });
      } catch (e) {
        return errorResult(readFailure(e, "the worker reports could not be read"));
      }
    },
  );
  server.registerTool(
    "acknowledge_worker_reports",
    {
      title: "Acknowledge worker reports",
      description: `Mark reports this conversation was offered as read (at most ${MAX_ACK_PER_CALL} per call). Read reports are kept for 24 hours.`,
      inputSchema: z.object({ deliveryIds: z.array(z.string().min(1).max(100)).min(1).max(MAX_ACK_PER_CALL) }).strict(),
      outputSchema: acknowledgeResult,
      annotations: {
        title: "Acknowledge worker reports",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    async ({ deliveryIds }) => {
      try {
        return plainResult({
          schemaVersion: 1,
          outcome: "acknowledged",
          ...(await acknowledgeReports(deps.db, conversationId, deliveryIds.map(canonicalRef), deps.now())),
        });
      } catch (e) {
        return errorResult(readFailure(e, "the receipt journal could not be written, so nothing was acknowledged"));
      }
    },
  );
  server.registerTool(
    "worker_report_status",
    {
      title: "Worker report status",
      description:
        "One report's status in this conversation: pending, delivered, read, or unknown once it has aged out.",
      inputSchema: z.object({ deliveryId: z.string().min(1).max(100) }).strict(),
      outputSchema: reportStatusResult,
      annotations: { title: "Worker report status", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ deliveryId: given }) => {
      // Report ids are stored in their canonical case (issue 32 item 4).
      const deliveryId = canonicalRef(given);
      try {
        return plainResult({
          schemaVersion: 1,
          deliveryId,
          state: await reportStatus(deps.db, conversationId, deliveryId),
        });
      } catch (e) {
        return errorResult(readFailure(e, "the worker report could not be read"));
      }
    },
  );
}
