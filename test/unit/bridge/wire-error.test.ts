/**
 * Issue 37 item 5: "an MCP error prints its prefix twice". McpError's message already starts with
 * "MCP error <code>: " and the lead's client adds it again to whatever message arrives; the bridge
 * sends the bare message with the code and data, so the lead reads exactly one prefix.
 */
import { describe, expect, it } from "vitest";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { wireError } from "../../../bridge/wire-error.js";

describe("issue 37 item 5: the bridge's MCP errors carry one prefix", () => {
  it("a controller's McpError passed through keeps its code and data, and the lead's client shows one prefix", () => {
    const fromController = new McpError(ErrorCode.InvalidParams, "seat is required", { field: "seat" });
    expect(fromController.message).toBe("MCP error -32602: seat is required");
    const sent = wireError(fromController);
    expect(sent).toMatchObject({ message: "seat is required", code: ErrorCode.InvalidParams, data: { field: "seat" } });
    // What the lead's SDK client builds from the wire's {code, message}.
    expect(new McpError(sent.code, sent.message).message).toBe("MCP error -32602: seat is required");
  });

  it("the bridge's own failures are InternalError with the bare message, even when already prefixed twice", () => {
    expect(wireError(new Error("could not open a session"))).toMatchObject({
      code: ErrorCode.InternalError,
      message: "could not open a session",
    });
    expect(wireError("MCP error -32001: MCP error -32001: Request timed out").message).toBe("Request timed out");
  });
});
