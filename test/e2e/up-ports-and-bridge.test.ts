/**
 * Issue 14 (items 4 and 5), found by using `clankie up` as a new user would: a second `up` on
 * another --port must not clash on the agent port (it moves with --port, and a clash there names
 * --agent-port, not --port); and the printed stdio-bridge line must work as printed when the
 * state dir was chosen with CLANKIE_STATE_DIR, from a harness whose environment lacks it.
 */
import { rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { runCli, startUp, type UpProcess } from "../kit/cli.js";
import { seedPglite, tempDir } from "../kit/test-db.js";

const EMBEDDED = { DATABASE_URL: "" };

/** A port P with P and P + 1 both free right now (the main port and the agent port). */
async function freePortPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const a = createServer();
    await new Promise<void>((r) => a.listen(0, "127.0.0.1", () => r()));
    const p = (a.address() as AddressInfo).port;
    const b = createServer();
    const ok = await new Promise<boolean>((r) => {
      b.once("error", () => r(false));
      b.listen(p + 1, "127.0.0.1", () => r(true));
    });
    await new Promise((r) => a.close(r));
    if (ok) await new Promise((r) => b.close(r));
    if (ok && p < 65535) return p;
  }
  throw new Error("no free port pair");
}

describe("clankie up: ports and the printed bridge line", () => {
  let stateDir: string;
  let home: string;
  let port: number;
  let up: UpProcess;

  beforeAll(async () => {
    stateDir = tempDir("c14-ports");
    home = tempDir("c14-home");
    seedPglite(stateDir);
    port = await freePortPair();
    // The state dir comes from the environment, as `CLANKIE_STATE_DIR=… npm start` would give it.
    up = await startUp(["--port", String(port), "--machine", "ports", "--pane-host", "none"], {
      ...EMBEDDED,
      CLANKIE_STATE_DIR: stateDir,
    });
  });
  afterAll(async () => {
    await up?.stop();
    for (const d of [stateDir, home]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it("the agent port moves with --port (P + 1), so a second up on another port does not clash on 7421", () => {
    expect(up.ready.statusUrl).toBe(`http://127.0.0.1:${port}`);
    expect(up.ready.agentUrl).toBe(`https://127.0.0.1:${port + 1}`);
  });

  it("a clash on the agent port is address_in_use naming --agent-port (exit 1), not --port", async () => {
    const other = tempDir("c14-ports-b");
    try {
      seedPglite(other);
      const taken = new URL(up.ready.agentUrl).port;
      const res = await runCli(
        [
          "up",
          "--state-dir",
          other,
          "--port",
          "0",
          "--agent-port",
          taken,
          "--pane-host",
          "none",
          "--log-level",
          "error",
        ],
        EMBEDDED,
      );
      expect(res.code).toBe(1);
      expect(res.stderr.trim()).toMatch(
        new RegExp(
          `^clankie: address_in_use: the agent port .*:${taken} is taken by another process .*choose another --agent-port$`,
        ),
      );
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("the bridge line names the state dir, and runs as printed from an environment without CLANKIE_STATE_DIR", async () => {
    expect(up.ready.bridge.args.slice(1)).toEqual(["mcp", "--state-dir", stateDir]);
    // What a harness started later has: its own HOME and PATH, none of this shell's variables.
    const transport = new StdioClientTransport({
      command: up.ready.bridge.command,
      args: up.ready.bridge.args,
      env: { PATH: process.env.PATH ?? "", HOME: home },
      stderr: "pipe",
    });
    const client = new Client({ name: "c14-bridge-line", version: "0.0.0" });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(["list_seats", "message_seat", "reconcile_seat_call"]));
      const seats = await client.callTool({ name: "list_seats", arguments: {} });
      expect(seats.isError ?? false).toBe(false);
    } finally {
      await client.close();
    }
  });
});
