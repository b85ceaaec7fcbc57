/** The lead's stop_task tool: stop a seat's current turn through its native control. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { PipelineDeps } from "../../delivery/pipeline.js";
import { stopTask } from "../../delivery/stop-task.js";
import { errorResult } from "../tool-result.js";
import { readFailure } from "../../db/error-text.js";
import { stopTaskResult } from "../output-schemas.js";

export function registerStopTask(server: McpServer, deps: PipelineDeps, conversationId: string): void {
  server.registerTool(
    "stop_task",
    {
      title: "Stop a seat's current turn",
      description:
        "Interrupt the current turn of a seat that advertises interrupt (list_seats). Outcome: stopped, already_finished, unsupported, unavailable, not_authorized (only the owner, a conversation messaging the seat or the one that hired it may stop it), or uncertain (never repeated).",
      inputSchema: z.object({ seat: z.string().min(1).max(200) }).strict(),
      outputSchema: stopTaskResult,
      annotations: {
        title: "Stop a seat's current turn",
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    async ({ seat }) => {
      try {
        const body = await stopTask(deps, conversationId, seat);
        return {
          content: [{ type: "text", text: JSON.stringify(body) }],
          structuredContent: body,
          isError: body.outcome !== "stopped" && body.outcome !== "already_finished",
        };
      } catch (e) {
        // Anything thrown came before the stop was sent (the agent call's own failures are answered as uncertain).
        return errorResult(readFailure(e, "the receipt journal could not be read, so no stop was sent"));
      }
    },
  );
}
