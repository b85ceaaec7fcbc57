/**
 * Issue 12 item 2: `clankie claude install-plugin` as an owner meets it (the compiled CLI, real
 * processes): its help page names its flags, the build ships the marketplace it installs from,
 * and without Claude Code it is a usage error (exit 2, one `clankie:` line) that changed nothing.
 * The install itself, with the pinned Claude's real `claude plugin` commands, runs in
 * test/harnesses/hire-claude-plugin.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { assertBuilt, runCli } from "../kit/cli.js";

const DIST_MARKET = fileURLToPath(new URL("../../dist/integrations/claude", import.meta.url));

describe("clankie claude install-plugin", () => {
  const dir = mkdtempSync(join(tmpdir(), "clankie-install-plugin-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("issue 12 item 2: the help page documents --config-dir and --claude-bin, and the build ships the clankie marketplace with its wrapper executable", async () => {
    assertBuilt();
    const help = await runCli(["claude", "install-plugin", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: clankie claude install-plugin");
    for (const flag of ["--config-dir", "--claude-bin", "--log-level"]) expect(help.stdout, flag).toContain(flag);
    expect(existsSync(join(DIST_MARKET, ".claude-plugin/marketplace.json"))).toBe(true);
    expect(existsSync(join(DIST_MARKET, "clankie-worker/.mcp.json"))).toBe(true);
    expect(existsSync(join(DIST_MARKET, "clankie-worker/hooks/hooks.json"))).toBe(true);
  });

  it("issue 12 item 2: without Claude Code it is a usage error naming the fix, and writes nothing into the config dir", async () => {
    const config = join(dir, "cfg");
    const res = await runCli([
      "claude",
      "install-plugin",
      "--config-dir",
      config,
      "--claude-bin",
      join(dir, "no-such-claude"),
    ]);
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split("\n")).toHaveLength(1);
    expect(res.stderr).toMatch(/^clankie: .*Claude Code is not installed here.*--claude-bin/);
    expect(existsSync(config) ? readdirSync(config) : []).toEqual([]);
  });
});
