/**
 * A Claude hire environment in plugin mode (the default claudeChannel): the clankie-worker plugin
 * installed into the test's CLAUDE_CONFIG_DIR by the product's own `clankie claude install-plugin`
 * (which runs the real `claude plugin marketplace add` and `claude plugin install`).
 * TEST-ONLY, beside the tengu_harbor seed of hire-envs.ts: `allowlisted` also seeds the cached
 * remote allowlist (tengu_harbor_ledger, the list the pinned 2.1.197 checks plugin channels
 * against) with clankie-worker@clankie, standing in for Anthropic or an org approving it.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { claudeHireEnv, type HireEnv } from "./hire-envs.js";

const CLI = fileURLToPath(new URL("../../../dist/cli/main.js", import.meta.url));

export function claudePluginHireEnv(
  bin: string,
  mockUrl: string,
  o: { allowlisted: boolean; install?: boolean },
): HireEnv & { configDir: string; installOutput: string } {
  const env = claudeHireEnv(bin, mockUrl);
  const { claudeChannel: _dev, ...hire } = env.hire;
  const launchEnv = env.hire.env!;
  const configDir = launchEnv.CLAUDE_CONFIG_DIR!;
  // The owner's command, with the same homes the hire's Claude uses.
  const installOutput =
    o.install === false
      ? ""
      : execFileSync(
          process.execPath,
          [CLI, "--json", "claude", "install-plugin", "--config-dir", configDir, "--claude-bin", bin],
          {
            encoding: "utf8",
            env: {
              PATH: launchEnv.PATH!,
              HOME: launchEnv.HOME!,
              XDG_CONFIG_HOME: launchEnv.XDG_CONFIG_HOME!,
              DISABLE_AUTOUPDATER: "1",
            },
          },
        );
  // Claude rewrote .claude.json while installing: seed on top of what it wrote.
  const file = join(configDir, ".claude.json");
  const json = JSON.parse(readFileSync(file, "utf8")) as { cachedGrowthBookFeatures?: Record<string, unknown> };
  json.cachedGrowthBookFeatures = {
    ...json.cachedGrowthBookFeatures,
    tengu_harbor: true,
    tengu_harbor_permissions: true,
    ...(o.allowlisted ? { tengu_harbor_ledger: [{ marketplace: "clankie", plugin: "clankie-worker" }] } : {}),
  };
  writeFileSync(file, JSON.stringify(json));
  return { ...env, hire, configDir, installOutput };
}
