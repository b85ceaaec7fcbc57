/** The lead's list_seats tool: every seat with its machine, status and input capabilities. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { listSeatsView, type SeatView } from "../../services/seat-view.js";
import type { StatusDeps } from "../../services/status-service.js";
import { errorResult, plainResult } from "../tool-result.js";
import { readFailure } from "../../db/error-text.js";
import { listSeatsResult } from "../output-schemas.js";

export function registerListSeats(server: McpServer, deps: StatusDeps): void {
  server.registerTool(
    "list_seats",
    {
      title: "List seats",
      description:
        "The fleet's seats: id, machine, kind, status, whether its agent is online, the input capabilities observed from its live control, cannotWork {reason, detail} when its harness itself says it cannot take a turn, and for a seat hire_agent started, hiredBy {conversationId, hireId}.",
      inputSchema: z.object({}).strict(),
      outputSchema: listSeatsResult,
      annotations: { title: "List seats", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async () => {
      try {
        const seats: SeatView[] = await listSeatsView(deps);
        return plainResult({ schemaVersion: 1, seats });
      } catch (e) {
        return errorResult(readFailure(e));
      }
    },
  );
}
