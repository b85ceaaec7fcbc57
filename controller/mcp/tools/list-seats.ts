/** The lead's list_seats tool: every seat with its machine, status and input capabilities. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { listSeatsView, type SeatView } from "../../services/seat-view.js";
import type { StatusDeps } from "../../services/status-service.js";
import { errorResult, plainResult } from "../tool-result.js";

export function registerListSeats(server: McpServer, deps: StatusDeps): void {
  server.registerTool(
    "list_seats",
    {
      title: "List seats",
      description: "The fleet's seats: id, machine, kind, status, whether its agent is online, and the input capabilities observed from its live control.",
      inputSchema: z.object({}).strict(),
    },
    async () => {
      try {
        const seats: SeatView[] = await listSeatsView(deps);
        return plainResult({ schemaVersion: 1, seats });
      } catch (e) {
        return errorResult(e);
      }
    },
  );
}
