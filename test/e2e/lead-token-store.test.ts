/**
 * Issue 32, item 5: tokens live in one place per conversation. `clankie lead token`, `clankie mcp`
 * and the controller agree on where a conversation's token is kept (leads/token-files.ts); a bridge
 * never disables a live lead's token without saying so; a 401 is reported as a 401, with the
 * command that re-issues the token, never as "the controller is not reachable". Real controller
 * process, real CLI, the bridge under the MCP SDK's stdio client.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { IssueLeadTokenRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { CLI, runCli } from "../kit/cli.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { ownerOf } from "../kit/owner.js";
import { prepareStore, tempDir } from "../kit/test-db.js";

const driver = process.env.DATABASE_URL ? "postgres" : "pglite";
/** Past the controller's 2 s token cache (TOKEN_CACHE_MS), so a replaced token would already be refused. */
const PAST_CACHE_MS = 2_500;

type Result = CallToolResult & { structuredContent?: Record<string, unknown> };

async function initializeStatus(mcpUrl: string, token: string): Promise<number> {
  const r = await fetch(mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } },
    }),
  });
  await r.text();
  return r.status;
}

interface Bridge {
  call(name: string, args: Record<string, unknown>): Promise<Result>;
  stderr(): string;
  close(): Promise<void>;
}

async function startBridge(args: string[]): Promise<Bridge> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp", "--log-level", "info", ...args],
    env: { PATH: process.env.PATH ?? "" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "token-store-lead", version: "0.0.0" });
  await client.connect(transport);
  return {
    call: async (name, a) => (await client.callTool({ name, arguments: a }, undefined, { timeout: 60_000 })) as Result,
    stderr: () => stderr,
    close: () => client.close(),
  };
}

/** Runs `clankie mcp` with stdin closed: a bridge that starts exits 0 at once; one that refuses exits 1. */
function bridgeExit(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const env = { PATH: process.env.PATH ?? "" };
  const child = spawn(process.execPath, [CLI, "mcp", ...args], { stdio: ["ignore", "ignore", "pipe"], env });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stderr })));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`lead tokens live in one place per conversation (issue 32 item 5, ${driver})`, () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let c: ControllerProcess;
  const lead = async (conversation: string) => {
    const r = await runCli(["lead", "token", "--conversation", conversation, "--json", "--state-dir", store.stateDir]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    return JSON.parse(r.stdout) as { token: string; replaced: boolean; tokenFile: string };
  };

  beforeAll(async () => {
    store = await prepareStore(driver);
    c = await startControllerProcess(store.stateDir, store.databaseUrl);
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
    await store?.cleanup();
  });

  it("item 5: lead token, then mcp on that conversation: the bridge uses the stored token, still live", async () => {
    const issued = await lead("alpha");
    expect(issued.tokenFile).toBe(join(store.stateDir, "leads", "alpha.token"));
    expect(readFileSync(issued.tokenFile, "utf8").trim()).toBe(issued.token);
    const bridge = await startBridge(["--state-dir", store.stateDir, "--conversation", "alpha"]);
    try {
      expect((await bridge.call("list_seats", {})).isError ?? false).toBe(false);
      await sleep(PAST_CACHE_MS);
      expect(await initializeStatus(c.mcpUrl, issued.token)).toBe(200);
      expect(readFileSync(issued.tokenFile, "utf8").trim()).toBe(issued.token);
      expect((await bridge.call("list_seats", {})).isError ?? false).toBe(false);
    } finally {
      await bridge.close();
    }
  });

  it("item 5: global-default's re-issue rewrites lead.token; the bridge without flags uses the new token", async () => {
    const before = readFileSync(join(store.stateDir, "lead.token"), "utf8").trim();
    const issued = await lead("global-default");
    expect(issued.replaced).toBe(true);
    expect(issued.tokenFile).toBe(join(store.stateDir, "lead.token"));
    expect(readFileSync(join(store.stateDir, "lead.token"), "utf8").trim()).toBe(issued.token);
    await sleep(PAST_CACHE_MS);
    expect(await initializeStatus(c.mcpUrl, before)).toBe(401);
    const bridge = await startBridge(["--state-dir", store.stateDir]);
    try {
      expect((await bridge.call("list_seats", {})).isError ?? false).toBe(false);
      // The words the bridge says on a rejected token, not a bare "401": a port number may hold those digits.
      expect(bridge.stderr()).not.toMatch(/rejected the lead token|HTTP 401|not reachable/);
    } finally {
      await bridge.close();
    }
  });

  it("item 5: a live token the state dir lacks: the bridge refuses naming lead token; it still works", async () => {
    const owner = ownerOf(c.url, c.ownerToken);
    const live = await owner.owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: "beta" }));
    const r = await bridgeExit(["--state-dir", store.stateDir, "--conversation", "beta"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`clankie lead token --conversation beta --state-dir ${store.stateDir}`);
    expect(r.stderr).toContain("would disable the lead using it");
    await sleep(PAST_CACHE_MS);
    expect(await initializeStatus(c.mcpUrl, live.token)).toBe(200);
    // A conversation with no token anywhere still gets one minted and stored by the bridge.
    const fresh = await bridgeExit(["--state-dir", store.stateDir, "--conversation", "gamma"]);
    expect(fresh.code, fresh.stderr).toBe(0);
    const minted = readFileSync(join(store.stateDir, "leads", "gamma.token"), "utf8").trim();
    expect(await initializeStatus(c.mcpUrl, minted)).toBe(200);
  });

  it("item 5: a rejected token is reported as a 401 with the fix, never as 'not reachable'", async () => {
    const file = join(tempDir("bogus-token"), "lead.token");
    writeFileSync(file, "lead_not-a-live-token\n");
    const bridge = await startBridge(["--state-dir", store.stateDir, "--token-file", file]);
    try {
      const r = await bridge.call("message_seat", { seat: "nowhere", message: "refused at the door" });
      const refused = { outcome: "undelivered", reason: "unauthenticated", dispatched: false };
      expect(r.structuredContent, JSON.stringify(r)).toMatchObject(refused);
      expect(String(r.structuredContent!.detail)).toMatch(/rejected the lead token .*HTTP 401/);
      await sleep(200);
      expect(bridge.stderr()).toContain("the controller rejected the lead token (HTTP 401)");
      expect(bridge.stderr()).not.toContain("not reachable");
    } finally {
      await bridge.close();
    }
  });

  it("item 5: a token revoked under a running bridge: 401 naming lead token; re-issued, it works", async () => {
    await lead("delta");
    const bridge = await startBridge(["--state-dir", store.stateDir, "--conversation", "delta"]);
    try {
      expect((await bridge.call("list_seats", {})).isError ?? false).toBe(false);
      const revoked = await runCli(["lead", "revoke", "--conversation", "delta", "--state-dir", store.stateDir]);
      expect(revoked.code, revoked.stderr).toBe(0);
      await sleep(PAST_CACHE_MS);
      const r = await bridge.call("message_seat", { seat: "nowhere", message: "after the revoke" });
      const refused = { outcome: "undelivered", reason: "unauthenticated" };
      expect(r.structuredContent, JSON.stringify(r)).toMatchObject(refused);
      const fix = `clankie lead token --conversation delta --state-dir ${store.stateDir}`;
      expect(String(r.structuredContent!.detail)).toContain(fix);
      await lead("delta");
      expect((await bridge.call("list_seats", {})).isError ?? false).toBe(false);
    } finally {
      await bridge.close();
    }
  });
});
