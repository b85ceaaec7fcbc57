/** Turns a pipeline outcome or a typed error into an MCP tool result. */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import { seatCallMeta, type ToolOutcome } from "../delivery/result-bodies.js";

export function toolResult(o: ToolOutcome): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(o.body) }],
    structuredContent: o.body,
    isError: o.isError,
    _meta: seatCallMeta(o),
  };
}

export function plainResult(body: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

/** A typed refusal: nothing was dispatched. */
export function errorResult(e: unknown): CallToolResult {
  const err = FleetError.from(e);
  const outcome = err.code === ErrorCode.InvalidArgument ? "invalid_argument" : err.code === ErrorCode.JournalUnavailable ? "undelivered" : "refused";
  const body = { schemaVersion: 1, outcome, reason: err.code, detail: err.message, dispatched: false };
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body, isError: true };
}
