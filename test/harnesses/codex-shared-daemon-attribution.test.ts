/**
 * Issue 13 part 2 / rule 48, the misattribution of discovered Codex seats (ADR 0050 addendum
 * "Codex callers"): two real Codex TUIs in two tmux panes on one CODEX_HOME share its
 * app-server daemon, which the FIRST pane's TUI started, so the daemon runs both threads'
 * worker MCP servers (`clankie worker mcp`, from the owner's config.toml) as its own children
 * under pane 1's tree. Codex 0.169 names the calling thread in every tools/call `_meta`; the
 * agent binds the caller to the seat whose proven thread that is. So a report from pane 2 is
 * pane 2's seat's (never pane 1's), and a thread on that daemon that is no seat's (started by
 * a plain app-server client) is refused with `unknown_worker_thread`, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { CodexConnection } from "../../node-agent/harnesses/codex/connection.js";
import { daemonSocketPath } from "../../node-agent/harnesses/codex/process.js";
import { silentLogger } from "../../shared/logger.js";
import { allPids, isFailure, readCmdline, readStat } from "../../node-agent/proofs/linux-read.js";
import { prepareStore } from "../kit/test-db.js";
import { assertBuilt, CLI } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";
const ASK = "report back: ";
const TOOL = "mcp__clankie/message_clankie";

describe("two discovered Codex panes on one shared daemon: each worker report is credited to its own seat", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let tmuxSock: string;
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let controller: RunningController;
  let agent: RunningAgent;
  let lead: LeadClient;
  let work2: string;
  let work3: string;
  const seats: { id: string; name: string; pane: string }[] = [];
  const reports = async () =>
    ((await lead.call("worker_reports", { limit: 100 })).structuredContent?.reports ?? []) as {
      seat: string;
      text: string;
    }[];
  const toolOutputFor = async (prompt: string) => {
    const r = await mock.waitFor((q) => q.lastUserText === prompt && q.turnToolOutputs.length > 0);
    const raw = r.turnToolOutputs.at(-1)!.output;
    const json = raw.match(/\{.*\}/s)?.[0];
    if (json === undefined) throw new Error(`the tool's output holds no receipt: ${raw}`);
    return JSON.parse(json) as Record<string, unknown>;
  };
  const tell = async (seat: string, prompt: string) => {
    let sent;
    for (let i = 0; i < 100; i++) {
      sent = await lead.call("message_seat", { seat, message: prompt });
      if (sent.structuredContent?.reason !== "proof_stale") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(sent!.structuredContent, JSON.stringify(sent!.structuredContent)).toMatchObject({ outcome: "delivered" });
  };

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    assertBuilt();
    mock = await startMockResponsesServer({
      reply: "reported",
      toolCall: (r) =>
        r.lastUserText.startsWith(ASK) && r.toolNames.includes(TOOL)
          ? { name: TOOL, arguments: { text: r.lastUserText.slice(ASK.length) } }
          : undefined,
    });
    cx = makeCodexEnv(bin, mock.baseUrl);
    work2 = join(cx.root, "w2");
    work3 = join(cx.root, "w3");
    store = await prepareStore("pglite");
    const agentStateDir = join(store.stateDir, "agent");
    // Each pane's thread is told apart by its folder (codex-thread.ts pickPaneThread); both are trusted.
    for (const d of [work2, work3]) mkdirSync(d, { recursive: true });
    appendFileSync(
      join(cx.codexHome, "config.toml"),
      [
        "",
        `[projects."${work2}"]`,
        'trust_level = "trusted"',
        "",
        "[mcp_servers.clankie]",
        `command = ${JSON.stringify(process.execPath)}`,
        `args = ${JSON.stringify([CLI, "worker", "mcp", "--agent-state-dir", agentStateDir])}`,
        'default_tools_approval_mode = "approve"',
        "",
      ].join("\n"),
    );
    tmuxSock = join(cx.root, "tmux.sock");
    const env = Object.entries(cx.env).map(([k, v]) => `${k}=${v}`);
    execFileSync(TMUX, [
      "-S",
      tmuxSock,
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "fleet",
      "-x",
      "200",
      "-y",
      "50",
      "-c",
      cx.workDir,
      "/usr/bin/env",
      ...env,
      bin,
      "-C",
      cx.workDir,
    ]);
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 1000,
      }),
      silentLogger,
    );
    agent = await startAgent(
      {
        ...compileAgentConfig({
          stateDir: agentStateDir,
          controllerUrl: controller.agentUrl,
          machine: "workbox",
          paneHost: "tmux",
          tmuxSocket: tmuxSock,
          statusRefreshMs: 300,
        }),
        joinToken: await controller.issueJoinToken("workbox"),
      },
      silentLogger,
    );
    await agent.linked;
    lead = await connectLead(controller.mcpUrl, controller.leadToken);
  });

  afterAll(async () => {
    await lead?.close();
    await agent?.close();
    await controller?.close();
    try {
      execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
    await store?.cleanup();
  });

  const liveCodexSeats = async () =>
    (
      ((await lead.call("list_seats", {})).structuredContent?.seats ?? []) as {
        id: string;
        name: string;
        kind: string;
        inputCapabilities: { deliveryModes: string[] };
      }[]
    ).filter((s) => s.kind === "codex" && s.inputCapabilities.deliveryModes.length > 0);

  it("rule 48: pane 2's report (its worker server runs under pane 1's daemon) is credited to pane 2's seat, and pane 1's to pane 1's", async () => {
    // Pane 1's TUI starts the daemon; pane 2 joins it once pane 1's seat is live.
    for (let i = 0; i < 600 && (await liveCodexSeats()).length < 1; i++) await new Promise((r) => setTimeout(r, 100));
    const first = (await liveCodexSeats())[0]!;
    const env = Object.entries(cx.env).map(([k, v]) => `${k}=${v}`);
    execFileSync(TMUX, [
      "-S",
      tmuxSock,
      "new-window",
      "-d",
      "-t",
      "fleet:",
      "-c",
      work2!,
      "/usr/bin/env",
      ...env,
      bin!,
      "-C",
      work2!,
    ]);
    let live = await liveCodexSeats();
    for (let i = 0; i < 600 && live.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      live = await liveCodexSeats();
    }
    expect(live).toHaveLength(2);
    const second = live.find((s) => s.id !== first.id)!;
    seats.push({ ...first, pane: "1" }, { ...second, pane: "2" });

    await tell(second.name, `${ASK}from pane two`);
    expect(await toolOutputFor(`${ASK}from pane two`)).toMatchObject({ received: true, deliveryStage: "stored" });
    await tell(first.name, `${ASK}from pane one`);
    expect(await toolOutputFor(`${ASK}from pane one`)).toMatchObject({ received: true, deliveryStage: "stored" });
    // Both worker servers are the daemon's children, and the daemon runs under pane 1's TUI.
    const argvOf = (pid: number) => {
      const a = readCmdline(pid);
      return isFailure(a) ? [] : a;
    };
    const ancestors = (pid: number) => {
      const out: number[] = [];
      for (let st = readStat(pid); !isFailure(st) && st.ppid > 1 && out.length < 64; st = readStat(st.ppid))
        out.push(st.ppid);
      return out;
    };
    const daemon = allPids().find((p) => argvOf(p).includes("--managed-daemon") && argvOf(p).includes("app-server"));
    expect(daemon).toBeDefined();
    const workers = allPids().filter(
      (p) =>
        argvOf(p).includes("worker") && argvOf(p).includes("mcp") && argvOf(p).includes(join(store.stateDir, "agent")),
    );
    expect(workers.length).toBeGreaterThanOrEqual(2);
    for (const w of workers) expect(ancestors(w)).toContain(daemon);
    const firstPaneShell = Number(
      execFileSync(TMUX, ["-S", tmuxSock, "display-message", "-p", "-t", "fleet:0", "#{pane_pid}"]).toString().trim(),
    );
    expect(ancestors(daemon!)).toContain(firstPaneShell);
    const got = await reports();
    expect(got.filter((r) => r.text === "from pane two").map((r) => r.seat)).toEqual([second.id]);
    expect(got.filter((r) => r.text === "from pane one").map((r) => r.seat)).toEqual([first.id]);
  });

  it("rule 48: a thread on the same daemon that is no seat's proven thread is refused (unknown_worker_thread); nothing is stored", async () => {
    const opened = await CodexConnection.open(daemonSocketPath(cx.codexHome));
    if (!opened.ok) throw new Error(opened.message);
    const c = opened.connection;
    try {
      const started = await c.call<{ thread: { id: string } }>("thread/start", { cwd: work3 });
      expect(started.ok, JSON.stringify(started)).toBe(true);
      const threadId = (started as { ok: true; result: { thread: { id: string } } }).result.thread.id;
      const prompt = `${ASK}from a thread in no pane`;
      // A thread's worker MCP server starts with the thread, and its first turn may go out before the server
      // offers its tools; the mock then just answers. Ask again until a turn is offered the tool.
      let after = 0;
      for (let attempt = 0; ; attempt++) {
        const turn = await c.call("turn/start", {
          threadId,
          input: [{ type: "text", text: prompt, text_elements: [] }],
        });
        expect(turn.ok, JSON.stringify(turn)).toBe(true);
        const asked = await mock.waitFor((q) => q.seq > after && q.lastUserText === prompt);
        if (asked.toolNames.includes(TOOL)) break;
        if (attempt >= 20) throw new Error(`the thread was never offered ${TOOL}: ${asked.toolNames.join(", ")}`);
        after = asked.seq;
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(await toolOutputFor(prompt)).toMatchObject({
        received: false,
        definitive: "not_sent",
        reason: "unknown_worker_thread",
      });
      expect((await reports()).some((r) => r.text === "from a thread in no pane")).toBe(false);
    } finally {
      c.close();
    }
  });
});
