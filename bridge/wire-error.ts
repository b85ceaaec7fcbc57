/**
 * An error the bridge answers a lead's request with. McpError's own message already starts
 * "MCP error <code>: ", and the lead's client adds that prefix again to whatever message
 * arrives, so an McpError thrown as-is reads "MCP error -32603: MCP error -32603: …" (issue 37
 * item 5). The error sent on the wire carries the code, the data and the bare message.
 */
import { ErrorCode as McpErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const PREFIX = /^(MCP error -?\d+: )+/;

export type WireError = Error & { code: number; data?: unknown };

export function wireError(e: unknown, code: number = McpErrorCode.InternalError): WireError {
  const message = (e instanceof Error ? e.message : String(e)).replace(PREFIX, "");
  return Object.assign(new Error(message), e instanceof McpError ? { code: e.code, data: e.data } : { code });
}
