/** Turns a pipeline outcome or a typed error into an MCP tool result. */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import { publicErrorText } from "../../shared/public-text.js";
import { InvalidTextError } from "../../shared/well-formed-text.js";
import { databaseFailure } from "../db/error-text.js";
import type { AdmissionRefusalOutcome } from "../../shared/delivery-bodies.js";
import { seatCallMeta, type ToolOutcome } from "../delivery/result-bodies.js";

export function toolResult(o: ToolOutcome): CallToolResult {
  const meta = seatCallMeta(o);
  return {
    content: [{ type: "text", text: JSON.stringify(o.body) }],
    structuredContent: o.body as unknown as Record<string, unknown>,
    isError: o.isError,
    ...(meta ? { _meta: meta } : {}),
  };
}

export function plainResult(body: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

/** A typed refusal: nothing was dispatched. */
export function errorResult(e: unknown): CallToolResult {
  // A database error that escaped its caller is typed here, in words: its text and SQLSTATE
  // go to no lead (issue 32 item 7).
  const err = FleetError.from(databaseFailure(e));
  // Journal unavailable before admission: this call dispatched nothing, but it says nothing
  // about the id either: an earlier answer for the same id still stands (a replay must never
  // read as "undelivered" for a message that was delivered), so the outcome is "unavailable".
  const outcome: AdmissionRefusalOutcome =
    err.code === ErrorCode.InvalidArgument
      ? "invalid_argument"
      : err.code === ErrorCode.JournalUnavailable
        ? "unavailable"
        : "refused";
  const detail =
    err.code === ErrorCode.JournalUnavailable
      ? `${publicErrorText(err.message)}; if this id was used before, its earlier answer stands: call again with it once the journal is back`
      : publicErrorText(err.message);
  // A refusal may name its reason more precisely than its code (invalid_text is an invalid_argument).
  const reason = err instanceof InvalidTextError ? err.reason : err.code;
  const body = {
    schemaVersion: 1,
    outcome,
    reason,
    detail,
    dispatched: false,
    ...(err.retryable ? { retryable: true } : {}),
  };
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body, isError: true };
}
