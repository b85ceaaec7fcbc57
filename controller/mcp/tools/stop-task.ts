/** The lead's stop_task tool: stop a seat's current turn through its native control. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { PipelineDeps } from "../../delivery/message-seat.js";
import { stopTask } from "../../delivery/stop-task.js";
import { errorResult } from "../tool-result.js";

export function registerStopTask(server: McpServer, deps: PipelineDeps, conversationId: string): void {
  server.registerTool(
    "stop_task",
    {
      title: "Stop a seat's current turn",
      description: "Interrupt the current turn of a seat that advertises interrupt (list_seats). Result: stopped, already_finished, unsupported, unavailable, or uncertain (never repeated).",
      inputSchema: z.object({ seat: z.string().min(1).max(200) }).strict(),
    },
    async ({ seat }) => {
      try {
        const body = await stopTask(deps, conversationId, seat);
        return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body, isError: body.result !== "stopped" && body.result !== "already_finished" };
      } catch (e) {
        return errorResult(e);
      }
    },
  );
}
