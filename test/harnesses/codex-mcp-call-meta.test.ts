/**
 * What the pinned Codex (0.169.0) tells an MCP server about the calling thread (issue 13 part 2,
 * rule 48; ADR 0050 addendum "Codex callers"), pinned with a logging MCP server
 * (kit/logging-mcp-server.mjs) in the owner's config.toml under the real TUI in tmux on its
 * shared daemon: the server runs as the daemon's child, its environment names no thread, and
 * every `tools/call` carries `_meta.threadId` (and `_meta["x-codex-turn-metadata"].thread_id`)
 * equal to the thread whose turn called it. The worker attribution relies on exactly this.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CodexConnection } from "../../node-agent/harnesses/codex/connection.js";
import { daemonSocketPath } from "../../node-agent/harnesses/codex/process.js";
import { isFailure, readCmdline } from "../../node-agent/proofs/linux-read.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";
const LOGGER = fileURLToPath(new URL("./kit/logging-mcp-server.mjs", import.meta.url));

type Line = {
  pid: number;
  ppid: number;
  start?: boolean;
  env?: Record<string, string>;
  msg?: { method?: string; params?: { _meta?: Record<string, unknown> } };
};

describe("Codex 0.169 names the calling thread in every MCP tools/call", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let tmuxSock: string;
  let out: string;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer({
      reply: "ok",
      toolCall: (r) => (r.lastUserText.startsWith("LOGPING") ? { name: "mcp__logmcp/ping", arguments: {} } : undefined),
    });
    cx = makeCodexEnv(bin, mock.baseUrl);
    out = join(cx.root, "logmcp.jsonl");
    appendFileSync(
      join(cx.codexHome, "config.toml"),
      [
        "",
        "[mcp_servers.logmcp]",
        `command = ${JSON.stringify(process.execPath)}`,
        `args = ${JSON.stringify([LOGGER, out])}`,
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
      "meta",
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
  });
  afterAll(async () => {
    try {
      execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
  });

  it("rule 48: the tools/call _meta names the thread; the server is the daemon's child; its environment does not name the thread", async () => {
    let c: CodexConnection | undefined;
    for (let i = 0; i < 300 && !c; i++) {
      const o = existsSync(daemonSocketPath(cx.codexHome))
        ? await CodexConnection.open(daemonSocketPath(cx.codexHome))
        : undefined;
      if (o?.ok) c = o.connection;
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(c).toBeDefined();
    try {
      let threads: string[] = [];
      for (let i = 0; i < 300 && threads.length === 0; i++) {
        const r = await c!.call<{ data: string[] }>("thread/loaded/list", {});
        threads = r.ok ? r.result.data : [];
        if (threads.length === 0) await new Promise((res) => setTimeout(res, 100));
      }
      expect(threads).toHaveLength(1);
      const threadId = threads[0]!;
      const turn = await c!.call("turn/start", {
        threadId,
        input: [{ type: "text", text: "LOGPING now", text_elements: [] }],
      });
      expect(turn.ok, JSON.stringify(turn)).toBe(true);
      await mock.waitFor((q) => q.lastUserText.startsWith("LOGPING") && q.turnToolOutputs.length > 0);
      const lines = readFileSync(out, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Line);
      const call = lines.find((l) => l.msg?.method === "tools/call")!;
      expect(call, JSON.stringify(lines.map((l) => l.msg?.method))).toBeDefined();
      expect(call.msg!.params!._meta).toMatchObject({
        threadId,
        "x-codex-turn-metadata": expect.objectContaining({ thread_id: threadId }),
      });
      const start = lines.find((l) => l.start && l.pid === call.pid)!;
      expect(Object.values(start.env ?? {})).not.toContain(threadId);
      const parent = readCmdline(call.ppid);
      expect(isFailure(parent) ? [] : parent).toEqual(expect.arrayContaining(["app-server", "--managed-daemon"]));
    } finally {
      c!.close();
    }
  });
});
