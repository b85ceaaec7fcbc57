/**
 * Claude Code: the interactive TUI with the Clankie channel (an MCP stdio server the agent
 * reaches over its channel socket) and the session hooks, opted in per session (rule 32).
 * Default: `--channels plugin:clankie-worker@clankie`, the plugin shipped in integrations/claude
 * (installed by `clankie claude install-plugin`), which carries the channel server and the hooks;
 * this hire then adds neither again, and names the CLI and the agent's folders in the pane's
 * environment for the plugin's wrapper. Development: `--dangerously-load-development-channels
 * server:clankie-seat` with the channel and hooks in this hire's own --mcp-config/--settings and
 * the plugin (if installed) switched off for the session, so nothing runs twice; that flag shows
 * a confirmation the owner answers (Clankie never does). Print mode never binds, so it is never
 * used. The worker MCP server (`clankie worker mcp`, no token: the agent proves the caller's
 * pane) is in --mcp-config in both modes; its tools are pre-allowed only under workerToolApproval.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHANNEL_SERVER_NAME } from "./channel-wire.js";
import type { CannotWork } from "../adapter.js";
import {
  CLI_PATH,
  WORKER_SERVER_NAME,
  WORKER_TOOLS,
  workerMcpCommand,
  type HarnessLauncher,
  type LaunchContext,
  type LaunchRequest,
  type LaunchPlan,
  type ScreenBlock,
} from "../../hire/launcher.js";
import { channelRefusal, CLAUDE_PLUGIN } from "./plugin-screen.js";

export class ClaudeLauncher implements HarnessLauncher {
  readonly harness = "claude" as const;

  async plan(req: LaunchRequest, ctx: LaunchContext): Promise<LaunchPlan> {
    const cli = CLI_PATH();
    const plugin = ctx.claudeChannel !== "development";
    const channel = {
      [CHANNEL_SERVER_NAME]: {
        command: process.execPath,
        args: [cli, "worker", "claude-channel", "--channel-dir", ctx.claudeChannelDir],
      },
    };
    const mcpConfig = join(ctx.hireDir, "mcp.json");
    writeFileSync(
      mcpConfig,
      JSON.stringify({ mcpServers: { [WORKER_SERVER_NAME]: workerMcpCommand(ctx), ...(plugin ? {} : channel) } }),
      { mode: 0o600 },
    );
    const settings = join(ctx.hireDir, "settings.json");
    // Hook commands are run by Claude through a shell: every word is a fixed path, single-quoted.
    const command = (sub: string) =>
      [process.execPath, cli, "worker", sub, "--report-dir", ctx.claudeReportDir]
        .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
        .join(" ");
    const on = (sub: string) => [{ matcher: "", hooks: [{ type: "command", command: command(sub) }] }];
    const permissions =
      ctx.workerToolApproval === "approve"
        ? { permissions: { allow: WORKER_TOOLS.map((t) => `mcp__${WORKER_SERVER_NAME}__${t}`) } }
        : {};
    // Rule 35: AskUserQuestion alone goes to the hiring lead (worker/claude-question-hook.ts); permission prompts never do.
    const question = [process.execPath, cli, "worker", "question-hook", "--agent-state-dir", ctx.agentStateDir]
      .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
      .join(" ");
    const preToolUse = [{ matcher: "AskUserQuestion", hooks: [{ type: "command", command: question }] }];
    const hooks = {
      hooks: {
        SessionStart: on("session-start-hook"),
        UserPromptSubmit: on("turn-hook"),
        Stop: on("turn-hook"),
        PreToolUse: preToolUse,
      },
    };
    // --settings outranks the user's settings: an installed plugin is off for a development hire.
    writeFileSync(
      settings,
      JSON.stringify({ ...permissions, ...(plugin ? {} : { ...hooks, enabledPlugins: { [CLAUDE_PLUGIN]: false } }) }),
      { mode: 0o600 },
    );
    const argv = [ctx.bin, "--mcp-config", mcpConfig, "--settings", settings];
    if (req.model) argv.push("--model", req.model);
    if (!plugin) {
      argv.push("--dangerously-load-development-channels", `server:${CHANNEL_SERVER_NAME}`);
      return { argv, env: {} };
    }
    argv.push("--channels", `plugin:${CLAUDE_PLUGIN}`);
    // The plugin's wrapper (integrations/claude/clankie-worker/bin/clankie-worker) reads these: fixed paths only.
    const env = {
      CLANKIE_NODE: process.execPath,
      CLANKIE_CLI: cli,
      CLANKIE_AGENT_STATE_DIR: ctx.agentStateDir,
      CLANKIE_CLAUDE_CHANNEL_DIR: ctx.claudeChannelDir,
      CLANKIE_CLAUDE_REPORT_DIR: ctx.claudeReportDir,
    };
    return { argv, env };
  }

  screenBlock(screen: string, paneId: string): ScreenBlock | undefined {
    if (/trust the files in this folder|project you created or one you trust|Do you trust/i.test(screen)) {
      return {
        kind: "trust_required",
        fix: `Claude asks whether to trust the folder in pane ${paneId}: that is the owner's decision. Answer it there, then message the seat.`,
      };
    }
    const refused = channelRefusal(screen, paneId);
    if (refused) return refused;
    if (/local development/i.test(screen)) {
      return {
        kind: "consent_required",
        fix: `Claude asks to confirm the development channel in pane ${paneId}; confirm it there (or install the clankie-worker plugin) and the hire continues.`,
      };
    }
    return undefined;
  }

  /**
   * Claude Code's own words when it cannot take a turn, as 2.1.332 shows them: with no key and no
   * login its status line reads "Not logged in · run /login" before any turn (a turn answers
   * "Not logged in · Please run /login"); with its model server gone a turn shows "Connection
   * refused — … (ECONNREFUSED) · retrying in 6s · attempt 5/10".
   */
  fatalScreen(screen: string): CannotWork | undefined {
    const login = /Not logged in · (?:Please )?run \/login/.exec(screen);
    if (login) return { reason: "no_auth", detail: `Claude Code shows "${login[0]}"` };
    const refused = /Connection refused[^\n]*retrying in[^\n]*/.exec(screen);
    if (refused) return { reason: "model_unreachable", detail: `Claude Code shows "${refused[0].trim()}"` };
    return undefined;
  }
}
