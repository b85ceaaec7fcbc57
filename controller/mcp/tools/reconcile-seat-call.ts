/** The lead's reconcile_seat_call tool: read (or settle) the original receipt by id. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { reconcileSeatCall, RECONCILE_SEAT_CALL } from "../../delivery/reconcile.js";
import type { PipelineDeps } from "../../delivery/message-seat.js";
import { errorResult, toolResult } from "../tool-result.js";

export const reconcileArgs = z
  .object({
    deliveryId: z.string().min(1).max(100).optional().describe("The message_seat id to reconcile."),
    hireId: z.string().min(1).max(100).optional().describe("The hire_agent id to reconcile."),
    settle: z.literal("not_delivered").optional().describe('Abandon an unresolved delivery as not delivered. It is kept as abandoned-unknown evidence and never resent.'),
  })
  .strict();

export function registerReconcileSeatCall(server: McpServer, deps: PipelineDeps, conversationId: string): void {
  server.registerTool(
    RECONCILE_SEAT_CALL,
    {
      title: "Reconcile a seat call",
      description: "Read what the original message_seat (or hire_agent) receipt proves, in this conversation only. Sends nothing, hires nothing.",
      inputSchema: reconcileArgs,
    },
    async (args) => {
      try {
        return toolResult(await reconcileSeatCall(deps, conversationId, args));
      } catch (e) {
        return errorResult(e);
      }
    },
  );
}
