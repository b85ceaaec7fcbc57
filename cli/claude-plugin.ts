/**
 * `clankie claude install-plugin`: installs the clankie-worker plugin (the Claude seat channel and
 * hooks, integrations/claude) with Claude Code's own commands, `claude plugin marketplace add
 * <the shipped marketplace>` then `claude plugin install clankie-worker@clankie`, so what Claude
 * writes (its settings, plugin cache, known marketplaces) is Claude's own. Both are idempotent.
 * Hires then use the default `--channels plugin:clankie-worker@clankie` (ADR 0040 addendum).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { InvalidArgumentError } from "../shared/errors.js";
import { installedFile, CLAUDE_PLUGIN } from "../node-agent/for-cli.js";
import { emit, type OutputOptions } from "./output.js";

const run = promisify(execFile);

/** The shipped marketplace folder (dist/integrations/claude in a build). */
export const claudeMarketplaceDir = () => installedFile("integrations/claude");

export async function installClaudePlugin(o: {
  configDir?: string | undefined;
  claudeBin?: string | undefined;
  env: NodeJS.ProcessEnv;
  out: OutputOptions;
}): Promise<void> {
  const marketplace = claudeMarketplaceDir();
  if (!existsSync(resolve(marketplace, ".claude-plugin/marketplace.json")))
    throw new Error(
      `the clankie marketplace is missing at ${marketplace}: rebuild Clankie (npm run build copies integrations/)`,
    );
  const env = { ...o.env, ...(o.configDir ? { CLAUDE_CONFIG_DIR: resolve(o.configDir) } : {}) };
  const claude = o.claudeBin ?? "claude";
  const step = async (args: string[]) => {
    try {
      // No shell: every word is a fixed path or name.
      return (await run(claude, args, { env, timeout: 120_000 })).stdout.trim();
    } catch (e) {
      const err = e as { code?: string; stderr?: string; stdout?: string; message: string };
      if (err.code === "ENOENT")
        throw new InvalidArgumentError(
          `Claude Code is not installed here (no ${claude} on PATH): install it, or pass --claude-bin`,
        );
      throw new Error(`\`claude ${args.join(" ")}\` failed: ${(err.stderr || err.stdout || err.message).trim()}`);
    }
  };
  const added = await step(["plugin", "marketplace", "add", marketplace]);
  const installed = await step(["plugin", "install", CLAUDE_PLUGIN]);
  emit(o.out, { plugin: CLAUDE_PLUGIN, marketplace, configDir: env.CLAUDE_CONFIG_DIR ?? null, installed: true }, () =>
    [
      added,
      installed,
      `Hires now launch Claude with --channels plugin:${CLAUDE_PLUGIN}. Claude takes it only when the plugin is on its channel allowlist; otherwise a hire answers not_ready (channel_plugin_not_allowed): see docs/hire-agent.md.`,
    ].join("\n"),
  );
}
