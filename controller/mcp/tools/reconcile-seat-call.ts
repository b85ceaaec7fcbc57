/** The lead's reconcile_seat_call tool: read (or settle) the original receipt by its id or its harness's own id. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { reconcileSeatCall, RECONCILE_SEAT_CALL } from "../../delivery/reconcile.js";
import type { PipelineDeps } from "../../delivery/pipeline.js";
import { errorResult, toolResult } from "../tool-result.js";
import { deliveryResult } from "../output-schemas.js";
import { journalCause } from "../../db/error-text.js";
import { FleetError, JournalUnavailableError } from "../../../shared/errors.js";

export const reconcileArgs = z
  .object({
    deliveryId: z.string().min(1).max(100).optional().describe("The message_seat id to reconcile."),
    hireId: z.string().min(1).max(100).optional().describe("The hire_agent id to reconcile."),
    nativeId: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[^\u0000-\u001f]+$/, "a native id has no control characters")
      .optional()
      .describe(
        "The harness's own id for the message (Codex clientId or turn id, OpenCode message id, Pi entry id), instead of deliveryId.",
      ),
    settle: z
      .literal("not_delivered")
      .optional()
      .describe(
        "Abandon an unresolved delivery as not delivered. It is kept as abandoned-unknown evidence and never resent.",
      ),
  })
  .strict();

export function registerReconcileSeatCall(server: McpServer, deps: PipelineDeps, conversationId: string): void {
  server.registerTool(
    RECONCILE_SEAT_CALL,
    {
      title: "Reconcile a seat call",
      description:
        'Read what the original message_seat (or hire_agent) receipt proves, in this conversation only. Sends nothing, hires nothing. Without "settle" it only reads (and may record what the seat\'s session proves); with settle:"not_delivered" it abandons an unresolved delivery for good.',
      inputSchema: reconcileArgs,
      outputSchema: deliveryResult,
      // Without settle it only reads; with settle it abandons a receipt for good, so it cannot be marked read-only as a whole.
      annotations: {
        title: "Reconcile a seat call",
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    async (args) => {
      try {
        return toolResult(await reconcileSeatCall(deps, conversationId, args));
      } catch (e) {
        // Rule 24: an unreadable journal reconciles and settles nothing, and says so in typed
        // words (journal_unavailable), never with the failed SQL.
        if (e instanceof FleetError) return errorResult(e);
        return errorResult(
          new JournalUnavailableError(
            `the receipt journal could not be read, so nothing was reconciled or settled (${journalCause(e)})`,
            e,
          ),
        );
      }
    },
  );
}
