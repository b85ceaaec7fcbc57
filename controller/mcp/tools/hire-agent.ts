/** The lead's hire_agent tool: argument schema and handler (the only way Clankie starts a worker). */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InvalidArgumentError } from "../../../shared/errors.js";
import { SEAT_CALL_META_KEY } from "../../delivery/result-bodies.js";
import { hireAgentArgs, HIRE_AGENT } from "../../hire/args.js";
import { hireAgent, type HireDeps } from "../../hire/hire-agent.js";
import { errorResult, toolResult } from "../tool-result.js";
import { hireAgentResult } from "../output-schemas.js";
import { observeHire } from "../../metrics/delivery-hooks.js";
import type { ToolOutcome } from "../../delivery/result-bodies.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

const seatCallMeta = z.object({ hireId: z.string().optional() }).passthrough();

/** The caller's hireId from `_meta["clankie/seat-call"]`, validated. */
export function callerHireId(meta: Record<string, unknown> | undefined): string | undefined {
  const raw = meta?.[SEAT_CALL_META_KEY];
  if (raw === undefined) return undefined;
  const parsed = seatCallMeta.safeParse(raw);
  if (!parsed.success)
    throw new InvalidArgumentError(`_meta["${SEAT_CALL_META_KEY}"] must be an object with an optional string hireId`);
  return parsed.data.hireId;
}

export function hireToolResult(o: ToolOutcome): CallToolResult {
  return {
    ...toolResult(o),
    _meta: { [SEAT_CALL_META_KEY]: { id: o.id, tool: o.tool, state: o.state, hireId: o.id } },
  };
}

export function registerHireAgent(server: McpServer, deps: HireDeps, conversationId: string): void {
  server.registerTool(
    HIRE_AGENT,
    {
      title: "Hire an agent",
      description:
        "Start a worker: open a new pane on the machine, launch the harness in workingDirectory with its native channel, and deliver the brief natively. Result: spawned (seat id, brief mechanism, proofs) or failed with a typed reason. A start_unconfirmed or delivery_unconfirmed hire must be reconciled with reconcile_seat_call({hireId}), never hired again.",
      inputSchema: hireAgentArgs,
      outputSchema: hireAgentResult,
      // Opens a pane and launches a process: not read-only; a repeated hireId returns the original hire.
      annotations: {
        title: "Hire an agent",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    async (args, extra) => {
      try {
        const hireId = callerHireId(extra._meta as Record<string, unknown> | undefined);
        return observeHire(
          deps.hooks?.metrics,
          hireToolResult(await hireAgent(deps, { conversationId, hireId }, args)),
        );
      } catch (e) {
        return observeHire(deps.hooks?.metrics, errorResult(e));
      }
    },
  );
}
