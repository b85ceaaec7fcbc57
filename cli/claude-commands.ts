/**
 * `clankie claude install-plugin` as a commander registration; the work is in claude-plugin.ts.
 * Split from cli.ts to keep that file to the program's shape.
 */
import type { Command } from "commander";
import type { FleetAction, FleetCtx } from "./fleet-commands.js";

export function registerClaudeCommands(program: Command, action: FleetAction): void {
  const claude = program.command("claude").description("owner: Claude Code integration");
  claude
    .command("install-plugin")
    .description(
      "install the clankie-worker plugin (Clankie's seat channel and hooks) from the clankie marketplace shipped with Clankie, with Claude Code's own `claude plugin` commands",
    )
    .option("--config-dir <dir>", "the CLAUDE_CONFIG_DIR to install into (default: Claude's own, ~/.claude)")
    .option("--claude-bin <path>", "the claude binary (default: claude on PATH)")
    .action(
      action(async (ctx: FleetCtx, o: { configDir?: string; claudeBin?: string }) => {
        const { installClaudePlugin } = await import("./claude-plugin.js");
        await installClaudePlugin({ configDir: o.configDir, claudeBin: o.claudeBin, env: process.env, out: ctx.out });
      }),
    );
}
