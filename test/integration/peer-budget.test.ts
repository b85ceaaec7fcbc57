/**
 * Rule 27 (issue 35 item 5): the worker bridge waits 50 s for a peer send. Codex ends an MCP
 * tool call at 60 s and remote peer proofs take 13–18 s, so message_peer must outwait the
 * worker server's ordinary 15 s agent budget and still answer before Codex gives up. The worker
 * MCP server (worker/fleet-mcp.ts) runs for real, in process, over an MCP client;
 * the node agent's half of its socket is a stand-in that binds the pane and then answers a
 * peer send late (20 s: past the ordinary budget) or never.
 */
import { createServer, type Server, type Socket } from "node:net";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createWorkerMcpServer, PEER_SEND_BUDGET_MS } from "../../worker/fleet-mcp.js";
import { WORKER_SOCKET } from "../../node-agent/worker-link/worker-endpoint.js";

const CODEX_TOOL_LIMIT_MS = 60_000;

/** A worker MCP server whose agent socket answers peer_send after `answerAfterMs` (never when undefined). */
async function workerWithAgent(
  answerAfterMs: number | undefined,
): Promise<{ client: Client; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "clankie-peer-budget-"));
  mkdirSync(join(dir, "worker"), { recursive: true });
  const sockets: Socket[] = [];
  const agent: Server = createServer((s) => {
    sockets.push(s);
    s.setEncoding("utf8");
    let buf = "";
    s.on("data", (d: string) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      const req = JSON.parse(buf.slice(0, nl)) as { op: string; id?: string };
      if (req.op === "bind")
        s.end(JSON.stringify({ ok: true, seatName: "sender", seatId: "box/sender", binding: "binding-1" }) + "\n");
      else if (req.op === "peer_send" && answerAfterMs !== undefined) {
        const body = { schemaVersion: 1, outcome: "delivered", deliveryId: req.id, detail: "delivered late" };
        setTimeout(() => s.end(JSON.stringify({ ok: true, state: "settled", body }) + "\n"), answerAfterMs);
      }
    });
  });
  await new Promise<void>((r) => agent.listen(join(dir, "worker", WORKER_SOCKET), r));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await createWorkerMcpServer({ agentStateDir: dir }).connect(a);
  const client = new Client({ name: "peer-budget-test", version: "0" });
  await client.connect(b);
  return {
    client,
    close: async () => {
      await client.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => agent.close(r));
    },
  };
}

describe("rule 27: the worker waits 50 s for a peer send, inside Codex's 60 s tool limit", () => {
  const open: { close: () => Promise<void> }[] = [];
  afterAll(async () => {
    for (const w of open) await w.close();
  });

  it("a peer answer after 20 s is the answer; with none, message_peer is uncertain at 50 s, before 60 s", async () => {
    expect(PEER_SEND_BUDGET_MS).toBe(50_000);
    const late = await workerWithAgent(20_000);
    const silent = await workerWithAgent(undefined);
    open.push(late, silent);
    const call = async (w: { client: Client }) => {
      const started = Date.now();
      const r = await w.client.callTool(
        { name: "message_peer", arguments: { seat: "box/peer", text: "hello" } },
        undefined,
        { timeout: 120_000 },
      );
      return { r, ms: Date.now() - started };
    };
    const [answered, unanswered] = await Promise.all([call(late), call(silent)]);
    expect(answered.r.structuredContent).toMatchObject({ outcome: "delivered", detail: "delivered late" });
    expect(answered.r.isError).toBe(false);
    expect(unanswered.r.structuredContent).toMatchObject({ outcome: "uncertain", deliveryStage: "uncertain" });
    expect(String((unanswered.r.structuredContent as { detail: string }).detail)).toContain("within 50 s");
    expect(unanswered.ms).toBeGreaterThanOrEqual(PEER_SEND_BUDGET_MS - 100);
    expect(unanswered.ms).toBeLessThan(CODEX_TOOL_LIMIT_MS - 5_000);
  }, 90_000);
});
