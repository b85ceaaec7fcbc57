/**
 * Workers answer back from a real OpenCode TUI (rule 48, scenario 22; issue 13 part 2): the
 * TUI runs in a private tmux pane with its own loopback server (`opencode --port P --session
 * S`), so the MCP servers it starts run in the seat's pane; its opencode.json loads
 * `clankie worker mcp` as a local MCP server. The node agent discovers the seat (not hired).
 * Issue 13 part 2: the lead's message_seat starts a turn through v1 prompt_async (the
 * adapter's delivery route, whose turns are offered MCP tools; a v2 prompt turn is offered
 * none on the pinned 1.18.33), so that turn is offered clankie_message_clankie; and a turn the
 * owner starts by typing into the TUI is offered it too. The mock model answers with a
 * clankie_message_clankie tool call; the agent proves the caller runs in the seat's pane, the
 * controller binds and stores the report, and the lead that last messaged the seat reads it.
 * No warm-up prompt: the first v1 prompt a fresh server takes reaches the model.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { freePort } from "./kit/opencode-server.js";
import {
  ASK,
  prepareWorkerReportStore,
  reportToolUse,
  startWorkerReportFleet,
  type WorkerReportFleet,
} from "./kit/worker-report-fleet.js";

const bin = requireHarness("opencode");
const TMUX = "/usr/bin/tmux";

/** Creates a session in WORK with a short-lived `opencode serve` over the same homes; the TUI then opens it by id. */
async function createSession(env: Record<string, string>, work: string): Promise<string> {
  const port = await freePort();
  const child = spawn(bin!, ["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
    cwd: work,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    let log = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`opencode serve did not start: ${log}`)), 60_000);
      const onData = (c: Buffer) => {
        log += c.toString();
        if (log.includes("listening on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
    });
    const res = await fetch(`http://127.0.0.1:${port}/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: { id: "mock-model", providerID: "mock" }, location: { directory: work } }),
    });
    const body = (await res.json()) as { data?: { id?: string } };
    if (!body.data?.id) throw new Error(`session create failed: ${JSON.stringify(body)}`);
    return body.data.id;
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  }
}

describe("a real OpenCode worker answers its lead with message_clankie through `clankie worker mcp`", () => {
  let mock: MockAnthropicServer;
  let fleet: WorkerReportFleet;
  let tmuxSock = "";
  let seat: { id: string; name: string };
  const claimFiles = () => {
    const dir = join(fleet.agentStateDir, "worker", "claims");
    return existsSync(dir) ? readdirSync(dir) : [];
  };

  beforeAll(async () => {
    if (!bin)
      throw new Error("opencode is not installed in .harnesses/opencode: run `npm run harnesses:install -- opencode`");
    assertBuilt();
    mock = await startMockAnthropicServer({ toolUse: reportToolUse });
    const store = await prepareWorkerReportStore();
    const root = join(store.stateDir, "opencode-seat");
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", TERM: "xterm-256color" };
    for (const [k, sub] of Object.entries({
      HOME: "home",
      XDG_CONFIG_HOME: "config",
      XDG_DATA_HOME: "data",
      XDG_STATE_HOME: "state",
      XDG_CACHE_HOME: "cache",
    })) {
      mkdirSync(join(root, sub), { recursive: true });
      env[k] = join(root, sub);
    }
    const work = join(root, "work");
    mkdirSync(work, { recursive: true });
    mkdirSync(join(root, "config/opencode"), { recursive: true });
    writeFileSync(
      join(root, "config/opencode/opencode.json"),
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        model: "mock/mock-model",
        small_model: "mock/mock-model",
        autoupdate: false,
        share: "disabled",
        provider: {
          mock: {
            npm: "@ai-sdk/anthropic",
            name: "Mock",
            options: { baseURL: `${mock.url}/v1`, apiKey: "sk-mock" },
            models: { "mock-model": { name: "Mock" } },
          },
        },
        mcp: { clankie: { type: "local", command: [store.workerMcp.command, ...store.workerMcp.args], enabled: true } },
      }),
    );
    const sessionId = await createSession(env, work);
    const port = await freePort();
    tmuxSock = join(root, "tmux.sock");
    execFileSync(TMUX, [
      "-S",
      tmuxSock,
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "oc",
      "-x",
      "160",
      "-y",
      "40",
      "-c",
      work,
      "/usr/bin/env",
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      bin!,
      "--port",
      String(port),
      "--hostname",
      "127.0.0.1",
      "--session",
      sessionId,
    ]);
    fleet = await startWorkerReportFleet(store, mock, tmuxSock);
    seat = await fleet.seat("opencode");
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    try {
      if (tmuxSock) execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    await mock?.close();
  });

  it("issue 13 part 2: a message_seat to the discovered OpenCode seat starts a turn offered message_clankie, and its report is stored under the binding for the lead", async () => {
    const text = "opencode message_seat report: done";
    const receipt = await fleet.askReport(seat.name, text);
    expect(
      mock.requests.find((r) => r.latestUserText.includes(ASK + text) && r.toolNames.length > 0)?.toolNames,
    ).toContain("clankie_message_clankie");
    expect(receipt).toMatchObject({
      received: true,
      deliveryStage: "stored",
      deliveryId: expect.any(String),
      binding: expect.any(String),
    });
    expect((await fleet.reports()).filter((r) => r.text === text)).toEqual([
      expect.objectContaining({ deliveryId: receipt.deliveryId, seat: seat.id, unadopted: false }),
    ]);
    expect(mock.userMessagesContaining(ASK + text)).toBe(1);
    expect(claimFiles()).toEqual([]);
  });

  it("rule 48: the OpenCode worker calls message_clankie from its pane, the report is stored under the binding, and the lead reads it", async () => {
    const before = new Set(mock.requests);
    // The owner types into the TUI (fixed text, no shell): the TUI's own turn is offered the MCP tools.
    execFileSync(TMUX, ["-S", tmuxSock, "send-keys", "-t", "oc", "-l", ASK + "opencode worker report: done"]);
    execFileSync(TMUX, ["-S", tmuxSock, "send-keys", "-t", "oc", "Enter"]);
    const receipt = await fleet.toolAnswer("opencode worker report: done", before);
    expect(receipt).toMatchObject({
      received: true,
      deliveryStage: "stored",
      deliveryId: expect.any(String),
      binding: expect.any(String),
    });
    expect((await fleet.reports()).filter((r) => r.text === "opencode worker report: done")).toEqual([
      expect.objectContaining({ deliveryId: receipt.deliveryId, seat: seat.id, unadopted: false }),
    ]);
    expect(claimFiles()).toEqual([]);
  });
});
