/**
 * Issue 13 part 2 / rule 48 (ADR 0050 addendum "Codex callers"): the worker MCP server carries
 * the Codex thread a tool call names (`_meta.threadId`, as Codex 0.169 sends it, or
 * `_meta["x-codex-turn-metadata"].thread_id`) on every request that call makes to the agent,
 * through the real MCP SDK over its in-memory transport; a call naming none adds nothing, and
 * a malformed id is dropped.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { codexThreadOf, scopeCallThreads, withCallThread } from "../../../worker/codex-call-thread.js";

describe("the calling Codex thread on worker requests (rule 48)", () => {
  it("rule 48: codexThreadOf reads Codex's _meta shapes and refuses anything that is not an id", () => {
    expect(codexThreadOf({ threadId: "01a2326e-6f97-7b93" })).toBe("01a2326e-6f97-7b93");
    expect(codexThreadOf({ "x-codex-turn-metadata": { thread_id: "abc-1" } })).toBe("abc-1");
    expect(codexThreadOf({ threadId: "a b\n" })).toBeUndefined();
    expect(codexThreadOf(undefined)).toBeUndefined();
  });

  it("rule 48: inside a tool call with _meta.threadId every agent request carries it; concurrent calls keep their own; no _meta adds nothing", async () => {
    const server = new McpServer({ name: "t", version: "0" }, { capabilities: { tools: {} } });
    scopeCallThreads(server);
    server.registerTool("probe", { inputSchema: z.object({ wait: z.number() }).strict() }, async ({ wait }) => {
      await new Promise((r) => setTimeout(r, wait));
      return { content: [{ type: "text", text: JSON.stringify(withCallThread({ op: "bind" })) }] };
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: "c", version: "0" });
    await client.connect(b);
    const text = (r: unknown) =>
      JSON.parse((r as { content: { text: string }[] }).content[0]!.text) as Record<string, unknown>;
    const [slow, fast, none] = await Promise.all([
      client.callTool({ name: "probe", arguments: { wait: 30 }, _meta: { threadId: "thread-a" } }),
      client.callTool({ name: "probe", arguments: { wait: 0 }, _meta: { threadId: "thread-b" } }),
      client.callTool({ name: "probe", arguments: { wait: 0 } }),
    ]);
    expect(text(slow)).toEqual({ op: "bind", codexThread: "thread-a" });
    expect(text(fast)).toEqual({ op: "bind", codexThread: "thread-b" });
    expect(text(none)).toEqual({ op: "bind" });
    await client.close();
  });
});
