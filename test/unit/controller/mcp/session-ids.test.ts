/**
 * Issue 34 item 3 (ADR 0037): MCP session ids are signed for the fleet and bound to the lead
 * token that opened them, and a replica that did not open a session resumes it from its id on
 * the pinned MCP SDK (this test fails if an SDK upgrade moves the fields resumeSession sets).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { newSessionKey, SessionIds } from "../../../../controller/mcp/session-ids.js";
import { resumeSession } from "../../../../controller/mcp/server.js";
import { tokenHash } from "../../../../shared/tokens.js";

const claim = { conversationId: "alpha", protocolVersion: "2025-06-18" };

describe("issue 34 item 3: MCP session ids every replica accepts", () => {
  it("an id verifies with the fleet's key and the token that opened it, and carries its conversation and protocol version", () => {
    const key = newSessionKey();
    const id = new SessionIds(key).mint(claim, tokenHash("lead_one"));
    expect(id).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    // Another replica: the same key from the database, a different process.
    expect(new SessionIds(key).verify(id, tokenHash("lead_one"))).toEqual(claim);
  });

  it("a rotated token, another fleet's key, a tampered id or a UUID is an unknown session", () => {
    const key = newSessionKey();
    const ids = new SessionIds(key);
    const id = ids.mint(claim, tokenHash("lead_one"));
    expect(ids.verify(id, tokenHash("lead_two"))).toBeUndefined();
    expect(new SessionIds(newSessionKey()).verify(id, tokenHash("lead_one"))).toBeUndefined();
    const [v, payload, sig] = id.split(".");
    const other = Buffer.from(JSON.stringify({ c: "beta", p: claim.protocolVersion, n: "x" })).toString("base64url");
    expect(ids.verify(`${v}.${other}.${sig}`, tokenHash("lead_one"))).toBeUndefined();
    expect(ids.verify(`${v}.${payload}.${sig}x`, tokenHash("lead_one"))).toBeUndefined();
    expect(ids.verify("0b6f0c0e-4cde-4c57-a3f4-3c7b8f7bd9b1", tokenHash("lead_one"))).toBeUndefined();
  });

  it("two sessions of one conversation and token get different ids", () => {
    const ids = new SessionIds(newSessionKey());
    expect(ids.mint(claim, tokenHash("t"))).not.toBe(ids.mint(claim, tokenHash("t")));
  });

  describe("resumeSession on the pinned SDK", () => {
    let server: Server | undefined;
    afterEach(async () => {
      await new Promise((r) => (server ? server.close(r) : r(undefined)));
    });

    it("a transport that never saw initialize serves tools/list and tools/call for a resumed id; any other id is 404", async () => {
      const id = new SessionIds(newSessionKey()).mint(claim, tokenHash("t"));
      const mcp = new McpServer({ name: "t", version: "0" }, { capabilities: { tools: {} } });
      mcp.registerTool("ping", { description: "ping" }, async () => ({ content: [{ type: "text", text: "pong" }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => id, enableJsonResponse: true });
      resumeSession(transport, id);
      await mcp.connect(transport);
      server = createServer((req, res) => void transport.handleRequest(req, res));
      await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
      const post = async (session: string, body: Record<string, unknown>) => {
        const r = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": claim.protocolVersion,
          },
          body: JSON.stringify({ jsonrpc: "2.0", ...body }),
        });
        return {
          status: r.status,
          body: (await r.json()) as { result?: { tools?: { name: string }[]; content?: { text: string }[] } },
        };
      };
      const listed = await post(id, { id: 1, method: "tools/list" });
      expect(listed.status).toBe(200);
      expect(listed.body.result?.tools?.map((t) => t.name)).toEqual(["ping"]);
      const called = await post(id, { id: 2, method: "tools/call", params: { name: "ping", arguments: {} } });
      expect(called.body.result?.content?.[0]?.text).toBe("pong");
      expect((await post("v1.other.id", { id: 3, method: "tools/list" })).status).toBe(404);
      await mcp.close();
    });
  });
});
