/**
 * Issue 37 item 5, the bridge's small untruths: with no controller it used to wait 20 s before
 * failing, and an MCP error reached the lead as "MCP error -32603: MCP error -32603: …". Now it
 * fails within a couple of seconds when nothing listens and nothing is starting, still waits for
 * a controller that is starting (an `up` opening its journal), and every error has one prefix
 * (the controller's own MCP errors passed through: test/unit/bridge/wire-error.test.ts).
 */
import { existsSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CLI, assertBuilt } from "../kit/cli.js";
import { seedPglite, tempDir } from "../kit/test-db.js";

async function bridge(args: string[]): Promise<Client> {
  assertBuilt();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp", "--log-level", "error", ...args],
    env: { PATH: process.env.PATH ?? "", DATABASE_URL: "" },
    stderr: "pipe",
  });
  const client = new Client({ name: "issue37-bridge", version: "0.0.0" });
  await client.connect(transport);
  return client;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** The message of a rejected request, and how long it took. */
async function failure(p: Promise<unknown>): Promise<{ message: string; ms: number }> {
  const t0 = Date.now();
  const message = await p.then(
    () => "resolved",
    (e: Error) => e.message,
  );
  return { message, ms: Date.now() - t0 };
}

describe("issue 37 item 5: the bridge without a controller", () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
  });

  it("no controller for the state dir: tools/list fails in seconds, not 20 s, with one MCP error prefix", async () => {
    const state = tempDir("i37-no-controller");
    writeFileSync(join(state, "lead.token"), "lead_x\n", { mode: 0o600 });
    const client = await bridge(["--state-dir", state]);
    closers.push(() => client.close());
    const f = await failure(client.listTools());
    expect(f.ms).toBeLessThan(5_000);
    expect(f.message).toMatch(
      /^MCP error -32603: could not open a session with controller of .*no controller is running for /,
    );
    expect(f.message.match(/MCP error/g)).toHaveLength(1);
    // A seat call is a definite not-sent, just as fast.
    const t0 = Date.now();
    const r = await client.callTool({ name: "message_seat", arguments: { seat: "x/y", message: "nobody home" } });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(r.structuredContent).toMatchObject({
      outcome: "undelivered",
      reason: "controller_unreachable",
      dispatched: false,
    });
  });

  it("--url where nothing listens (connection refused): fails in seconds and says nothing listens there", async () => {
    const state = tempDir("i37-refused");
    writeFileSync(join(state, "lead.token"), "lead_x\n", { mode: 0o600 });
    const client = await bridge(["--state-dir", state, "--url", `http://127.0.0.1:${await freePort()}/mcp`]);
    closers.push(() => client.close());
    const f = await failure(client.listTools());
    expect(f.ms).toBeLessThan(5_000);
    expect(f.message).toMatch(/nothing listens there and no controller is starting for it/);
    expect(f.message.match(/MCP error/g)).toHaveLength(1);
  });

  it("a controller that is starting (up initialising its database) is waited for, not failed fast", async () => {
    // `up` holds the embedded database's lock while it loads PGlite and opens the journal.
    const state = tempDir("i37-starting");
    seedPglite(state);
    const up = spawn(
      process.execPath,
      [CLI, "up", "--json", "--state-dir", state, "--port", "0", "--pane-host", "none", "--log-level", "error"],
      { env: { ...process.env, DATABASE_URL: "" }, stdio: ["ignore", "pipe", "inherit"] },
    );
    closers.push(() => new Promise((r) => (up.exitCode !== null ? r(null) : (up.once("exit", r), up.kill("SIGTERM")))));
    const deadline = Date.now() + 30_000;
    while (!(existsSync(join(state, "pgdata.lock")) && existsSync(join(state, "lead.token")))) {
      if (Date.now() > deadline) throw new Error("up never took its database lock");
      await new Promise((r) => setTimeout(r, 20));
    }
    // Not listening yet: there is no controller.json when the bridge asks.
    expect(existsSync(join(state, "controller.json"))).toBe(false);
    const client = await bridge(["--state-dir", state]);
    closers.push(() => client.close());
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("message_seat");
  });
});
