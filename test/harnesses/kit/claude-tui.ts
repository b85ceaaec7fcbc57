/**
 * Runs the real interactive Claude Code in a tmux pane on a private tmux socket, with the
 * Clankie channel server, the SessionStart and turn hooks (from dist/) and every home under a temp dir.
 * TEST-ONLY: Claude gates channels on a remote feature flag (2.1.197 and 2.1.332); we seed its local
 * cache (cachedGrowthBookFeatures.tengu_harbor in $CLAUDE_CONFIG_DIR/.claude.json) here and
 * nowhere else. The dev-channel confirmation dialog is answered with Enter, as an owner would.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CHANNEL_SERVER_NAME, channelPaths } from "../../../node-agent/harnesses/claude/channel-wire.js";
import { channelHello } from "../../../node-agent/harnesses/claude/channel-client.js";
import { readSessionReport } from "../../../node-agent/harnesses/claude/session-report.js";
import { claudeOccupantId, observeClaudeOccupant } from "../../../node-agent/harnesses/claude/occupant.js";
import type { SeatRecord } from "../../../node-agent/harnesses/adapter.js";
import { SeatKind } from "../../../shared/verdicts.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const CLI = join(ROOT, "dist/cli/main.js");

export interface ClaudeTui {
  readonly dir: string;
  readonly channelDir: string;
  readonly reportDir: string;
  readonly claudePid: number;
  readonly tmuxSocket: string;
  readonly paneId: string;
  capture(): string;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startClaudeTui(
  bin: string,
  mockUrl: string,
  options: {
    optIn?: boolean;
    /** false: no Clankie channel at all (a hand-started Claude); ready once its hook reported the session's inbox socket. */
    channel?: boolean;
    channelDir?: string;
    reportDir?: string;
    mcpServers?: Record<string, { command: string; args: string[] }>;
    allowedTools?: string[];
    preToolUse?: { matcher: string; command: string; timeoutSeconds?: number }[];
  } = {},
): Promise<ClaudeTui> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build (npm run test:harnesses does)`);
  const dir = mkdtempSync(join(tmpdir(), "clankie-claude-"));
  const config = join(dir, "config");
  const work = join(dir, "work");
  // A node agent's own folders when the test runs one (<agent state>/claude/{channels,sessions}).
  const channelDir = options.channelDir ?? join(dir, "channel");
  const reportDir = options.reportDir ?? join(dir, "reports");
  for (const d of [config, work, join(dir, "home"), reportDir]) mkdirSync(d, { recursive: true });
  const apiKey = "sk-ant-api03-clankie-test-key-0123456789abcdefghij";
  writeFileSync(
    join(config, ".claude.json"),
    JSON.stringify({
      hasCompletedOnboarding: true,
      projects: { [work]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
      customApiKeyResponses: { approved: [apiKey.slice(-20)], rejected: [] },
      // Channels only: the inbox needs no flag (seen on 2.1.332), so an inbox test seeds none.
      ...(options.channel === false
        ? {}
        : { cachedGrowthBookFeatures: { tengu_harbor: true, tengu_harbor_permissions: true } }),
    }),
  );
  const mcpConfig = join(dir, "mcp.json");
  writeFileSync(
    mcpConfig,
    JSON.stringify({
      mcpServers: {
        ...options.mcpServers,
        ...(options.channel === false
          ? {}
          : {
              [CHANNEL_SERVER_NAME]: {
                command: process.execPath,
                args: [CLI, "worker", "claude-channel", "--channel-dir", channelDir],
              },
            }),
      },
    }),
  );
  const settings = join(dir, "settings.json");
  const command = (sub: string) =>
    [process.execPath, CLI, "worker", sub, "--report-dir", reportDir].map((a) => `'${a}'`).join(" ");
  const on = (sub: string) => [{ matcher: "", hooks: [{ type: "command", command: command(sub) }] }];
  // The owner's own pre-approval of named tools (a permission prompt is never answered for them).
  const permissions = options.allowedTools ? { permissions: { allow: options.allowedTools } } : {};
  // PreToolUse hooks the test names (the question hook matches AskUserQuestion only).
  const pre = options.preToolUse
    ? {
        PreToolUse: options.preToolUse.map((h) => ({
          matcher: h.matcher,
          hooks: [{ type: "command", command: h.command, ...(h.timeoutSeconds ? { timeout: h.timeoutSeconds } : {}) }],
        })),
      }
    : {};
  writeFileSync(
    settings,
    JSON.stringify({
      ...permissions,
      hooks: {
        SessionStart: on("session-start-hook"),
        UserPromptSubmit: on("turn-hook"),
        Stop: on("turn-hook"),
        ...pre,
      },
    }),
  );

  const tmuxSocket = `clankie-claude-${process.pid}-${Date.now()}`;
  const env: Record<string, string> = {
    HOME: join(dir, "home"),
    CLAUDE_CONFIG_DIR: config,
    XDG_CONFIG_HOME: join(dir, "xdg-config"),
    XDG_DATA_HOME: join(dir, "xdg-data"),
    XDG_CACHE_HOME: join(dir, "xdg-cache"),
    ANTHROPIC_BASE_URL: mockUrl,
    ANTHROPIC_API_KEY: apiKey,
    DISABLE_AUTOUPDATER: "1",
    PATH: process.env.PATH ?? "",
  };
  const args = ["--mcp-config", mcpConfig, "--settings", settings, "--model", "claude-sonnet-4-5"];
  if (options.optIn !== false && options.channel !== false)
    args.push("--dangerously-load-development-channels", `server:${CHANNEL_SERVER_NAME}`);
  const tmux = (...a: string[]) => execFileSync("tmux", ["-L", tmuxSocket, ...a], { encoding: "utf8" });
  // tmux runs the command through a shell; every word is a fixed path or flag, never message text.
  tmux(
    "new-session",
    "-d",
    "-s",
    "claude",
    "-x",
    "200",
    "-y",
    "50",
    "-c",
    work,
    ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    [bin, ...args].map((a) => `'${a}'`).join(" "),
  );
  const paneId = tmux("display-message", "-p", "-t", "claude", "#{pane_id}").trim();
  const capture = () => tmux("capture-pane", "-p", "-t", paneId);

  let claudePid = -1;
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const close = async () => {
    // Claude is ours (started in our private tmux): end it, and wait until it has, before removing its home.
    if (claudePid > 0 && alive(claudePid)) process.kill(claudePid, "SIGTERM");
    for (let i = 0; i < 50 && claudePid > 0 && alive(claudePid); i++) await sleep(100);
    if (claudePid > 0 && alive(claudePid)) process.kill(claudePid, "SIGKILL");
    try {
      tmux("kill-server");
    } catch {
      // already gone
    }
    await sleep(300);
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  let answered = false;
  for (let i = 0; i < 600 && claudePid < 0; i++) {
    const screen = capture();
    if (!answered && /local development/i.test(screen)) {
      tmux("send-keys", "-t", paneId, "Enter");
      answered = true;
    }
    if (options.channel === false) {
      const report = readdirSync(reportDir).find((f) => /^claude-\d+\.session\.json$/.test(f));
      const pid = report ? Number(/\d+/.exec(report)![0]) : -1;
      if (pid > 0 && readSessionReport(reportDir, pid)?.inbox) claudePid = pid;
      else await sleep(200);
      continue;
    }
    const sock = existsSync(channelDir) ? readdirSync(channelDir).find((f) => /^claude-\d+\.sock$/.test(f)) : undefined;
    const pid = sock ? Number(/\d+/.exec(sock)![0]) : -1;
    // Ready when Claude has finished the MCP handshake with the channel and the hook has reported.
    if (pid > 0 && readdirSync(reportDir).length > 0 && existsSync(channelPaths(channelDir, pid).tokenFile)) {
      const hello = await channelHello(channelPaths(channelDir, pid), 2000);
      if (hello.ok && hello.mcpReady) claudePid = pid;
    }
    if (claudePid < 0) await sleep(200);
  }
  if (claudePid < 0) {
    const screen = capture();
    await close();
    throw new Error(
      `Claude did not start its ${options.channel === false ? "inbox" : "channel"} and session report:\n${screen}`,
    );
  }
  return { dir, channelDir, reportDir, claudePid, tmuxSocket, paneId, capture, close };
}

/** The seat discovery records for this Claude: its occupant is this process lifetime in this session (rule 46). */
export async function claudeSeat(tui: ClaudeTui, name: string): Promise<SeatRecord> {
  return {
    name,
    kind: SeatKind.Claude,
    title: "claude",
    occupantId: claudeOccupantId(await observeClaudeOccupant(tui.claudePid, tui.reportDir)),
    createdAtMs: Date.now(),
    control: { channelDir: tui.channelDir, reportDir: tui.reportDir, claudePid: tui.claudePid },
  };
}
