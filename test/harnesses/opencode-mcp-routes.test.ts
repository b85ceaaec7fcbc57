/**
 * What the OpenCode adapter and hire are built on (issue 12 item 5, issue 13 part 2;
 * docs/hire-agent.md "Worker reports from hired seats", ADR 0040 addendum): this pins the
 * pinned OpenCode's own behaviour, against the mock Anthropic server, so the day it changes
 * this fails. A turn started through v1 `/session/:id/prompt_async` (the adapter's delivery
 * route, and so the brief's) is offered the MCP server's message_clankie, while a turn started
 * through v2 `/api/session/:id/prompt` (which the adapter uses only to join a v2 run) is
 * offered none of its tools. `clankie worker mcp`, given through OPENCODE_CONFIG_CONTENT, runs
 * as a child of the process that serves the API: so the hire runs that server in the pane (the
 * TUI's own, `opencode --port P --session S`), never as a detached `opencode serve`.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt, CLI } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { freePort } from "./kit/opencode-server.js";
import { rmSync } from "node:fs";
import { join } from "node:path";

const bin = requireHarness("opencode");
const H = { "content-type": "application/json" };

describe("pinned OpenCode: which turns are offered the worker server's tools", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let serve: ChildProcess;
  let url = "";
  const stateDir = () => join(env.root, "agent");
  const session = async () =>
    (
      (await (
        await fetch(`${url}/api/session`, {
          method: "POST",
          headers: H,
          body: JSON.stringify({ location: { directory: env.work } }),
        })
      ).json()) as { data: { id: string } }
    ).data.id;
  /** The clankie tools offered to the turn for MARKER (its model request; the title request offers no tools at all). */
  const clankieTools = async (marker: string) => {
    for (let i = 0; i < 600; i++) {
      const turn = mock.requestsFor(marker).find((r) => r.toolNames.length > 0);
      if (turn) return turn.toolNames.filter((n) => n.includes("clankie"));
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no model turn for ${marker}`);
  };

  beforeAll(async () => {
    if (!bin)
      throw new Error("opencode is not installed in .harnesses/opencode: run `npm run harnesses:install -- opencode`");
    assertBuilt();
    mock = await startMockAnthropicServer({});
    env = openCodeHireEnv(bin, mock.url);
    const port = await freePort();
    const mcp = JSON.stringify({
      mcp: {
        clankie: {
          type: "local",
          command: [process.execPath, CLI, "worker", "mcp", "--agent-state-dir", stateDir()],
          enabled: true,
        },
      },
    });
    serve = spawn(bin, ["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
      cwd: env.work,
      env: { ...env.hire.env, OPENCODE_CONFIG_CONTENT: mcp },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let log = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`opencode serve did not listen: ${log}`)), 60_000);
      const on = (c: Buffer) => {
        log += c.toString();
        if (log.includes("listening on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      serve.stdout!.on("data", on);
      serve.stderr!.on("data", on);
    });
    url = `http://127.0.0.1:${port}`;
    // Observed on 1.18.33: the first v2 prompt a fresh server admits never reaches the model; a throwaway takes it.
    const warm = await session();
    await fetch(`${url}/api/session/${warm}/prompt`, {
      method: "POST",
      headers: H,
      body: JSON.stringify({ prompt: { text: "warm-up" }, delivery: "queue" }),
    });
    await fetch(`${url}/api/session/${warm}/interrupt`, { method: "POST", headers: H });
    // A turn started before the server's MCP client connects is offered no MCP tools on either route.
    let status = "";
    for (let i = 0; i < 600 && !status.includes('"connected"'); i++) {
      status = await (await fetch(`${url}/mcp?directory=${encodeURIComponent(env.work)}`)).text();
      if (!status.includes('"connected"')) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toContain('"clankie":{"status":"connected"}');
  });
  afterAll(async () => {
    mock?.release();
    if (serve?.exitCode === null) {
      serve.kill("SIGTERM");
      await new Promise((r) => serve.once("exit", r));
    }
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("with the MCP server connected, a v1 prompt_async turn is offered message_clankie and a later v2 prompt turn no clankie tool", async () => {
    const v1 = await fetch(`${url}/session/${await session()}/prompt_async?directory=${encodeURIComponent(env.work)}`, {
      method: "POST",
      headers: H,
      body: JSON.stringify({
        parts: [{ type: "text", text: "v1-route-marker" }],
        model: { providerID: "mock", modelID: "mock-model" },
      }),
    });
    expect(v1.status).toBe(204);
    expect(await clankieTools("v1-route-marker")).toContain("clankie_message_clankie");
    const v2 = await fetch(`${url}/api/session/${await session()}/prompt`, {
      method: "POST",
      headers: H,
      body: JSON.stringify({ prompt: { text: "v2-route-marker" }, delivery: "queue" }),
    });
    expect(v2.status).toBe(200);
    expect(await clankieTools("v2-route-marker")).toEqual([]);
  });

  it("the worker server runs as a child of the process serving the API, so the hire runs that server inside the pane", () => {
    const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
      .split("\n")
      .map((l) => l.trim().split(/\s+/));
    const worker = rows.filter((r) => r.includes("mcp") && r.includes(stateDir()));
    expect(worker.map((r) => Number(r[1]))).toEqual([serve.pid]);
  });
});
