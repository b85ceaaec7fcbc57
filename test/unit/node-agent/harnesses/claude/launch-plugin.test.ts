/**
 * Issue 12 items 1 and 4 / inventory rule 32, Claude's plugin mode without a Claude: the shipped
 * clankie-worker plugin declares the channel server and the same hooks the development hire sets,
 * its wrapper runs the right `clankie worker` helper with the agent's folders from an installed
 * copy, the plugin-mode launch passes neither again (and the development launch switches the
 * plugin off), and the banner lines the pinned Claude shows for a refused plugin channel are
 * definite screen blocks. The real binary runs these in test/harnesses/hire-claude-plugin*.test.ts.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ClaudeLauncher } from "../../../../../node-agent/harnesses/claude/launch.js";
import type { LaunchContext } from "../../../../../node-agent/hire/launcher.js";
import { CHANNEL_SERVER_NAME } from "../../../../../node-agent/harnesses/claude/channel-wire.js";

const PLUGIN = fileURLToPath(new URL("../../../../../integrations/claude/clankie-worker", import.meta.url));
const WRAPPER = join(PLUGIN, "bin/clankie-worker");

function ctx(o: Partial<LaunchContext> = {}): LaunchContext {
  const root = mkdtempSync(join(tmpdir(), "launch-claude-plugin-"));
  return {
    bin: "/bin/true",
    hireDir: root,
    claudeChannelDir: join(root, "agent/claude/channels"),
    claudeReportDir: join(root, "agent/claude/sessions"),
    piSocketDir: join(root, "pi"),
    claudeChannel: "plugin",
    agentStateDir: join(root, "agent"),
    workerToolApproval: "owner",
    env: {},
    ...o,
  };
}
const req = { hireId: "h-1", workingDirectory: "/tmp", title: "t" };
const json = <T>(path: string) => JSON.parse(readFileSync(path, "utf8")) as T;
type Hooks = Record<string, { matcher: string; hooks: { type: string; command: string }[] }[]>;

/** Runs the wrapper with a recorder standing in for the CLI: what it would run, word by word. */
function wrapperRun(helper: string, env: Record<string, string>): { status: number | null; argv: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "clankie-wrapper-"));
  const recorder = join(dir, "rec.mjs");
  writeFileSync(
    recorder,
    `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(join(dir, "argv.json"))}, JSON.stringify(process.argv.slice(2)));\n`,
  );
  const r = spawnSync("sh", [WRAPPER, helper], {
    env: { PATH: process.env.PATH ?? "", CLANKIE_NODE: process.execPath, CLANKIE_CLI: recorder, ...env },
    encoding: "utf8",
  });
  let argv: string[] = [];
  try {
    argv = json<string[]>(join(dir, "argv.json"));
  } catch {
    // the wrapper refused before running anything
  }
  return { status: r.status, argv };
}

describe("the shipped clankie-worker plugin (issue 12 item 1)", () => {
  it("rule 32: the marketplace is `clankie` with the plugin `clankie-worker`, whose channel server is clankie-seat run by the wrapper from ${CLAUDE_PLUGIN_ROOT}", () => {
    const market = json<{ name: string; plugins: { name: string; source: string }[] }>(
      join(PLUGIN, "../.claude-plugin/marketplace.json"),
    );
    expect(market.name).toBe("clankie");
    expect(market.plugins.map((p) => [p.name, p.source])).toEqual([["clankie-worker", "./clankie-worker"]]);
    expect(json<{ name: string }>(join(PLUGIN, ".claude-plugin/plugin.json")).name).toBe("clankie-worker");
    const mcp = json<{ mcpServers: Record<string, { command: string; args: string[] }> }>(join(PLUGIN, ".mcp.json"));
    expect(mcp.mcpServers).toEqual({
      [CHANNEL_SERVER_NAME]: { command: "sh", args: ["${CLAUDE_PLUGIN_ROOT}/bin/clankie-worker", "claude-channel"] },
    });
  });

  it("issue 12 item 1: the plugin's hooks are the events and matchers the development hire sets (SessionStart, UserPromptSubmit/Stop, PreToolUse AskUserQuestion)", async () => {
    const plugin = json<{ hooks: Hooks }>(join(PLUGIN, "hooks/hooks.json")).hooks;
    const plan = await new ClaudeLauncher().plan(req, ctx({ claudeChannel: "development" }));
    const dev = json<{ hooks: Hooks }>(plan.argv[plan.argv.indexOf("--settings") + 1]!).hooks;
    const shape = (h: Hooks) =>
      Object.fromEntries(Object.entries(h).map(([event, list]) => [event, list.map((l) => l.matcher)]));
    expect(shape(plugin)).toEqual(shape(dev));
    const helperOf = (c: string) => / (\S+)$/.exec(c)?.[1];
    expect(Object.fromEntries(Object.entries(plugin).map(([e, l]) => [e, helperOf(l[0]!.hooks[0]!.command)]))).toEqual({
      SessionStart: "session-start-hook",
      UserPromptSubmit: "turn-hook",
      Stop: "turn-hook",
      PreToolUse: "question-hook",
    });
    for (const l of Object.values(plugin))
      expect(l[0]!.hooks[0]!.command).toMatch(/^sh "\$\{CLAUDE_PLUGIN_ROOT\}\/bin\/clankie-worker" [a-z-]+$/);
  });

  it("issue 12 item 1: the wrapper runs each helper with the hire's folders from the pane's environment, else the default agent state dir", () => {
    const env = {
      CLANKIE_AGENT_STATE_DIR: "/s/agent",
      CLANKIE_CLAUDE_CHANNEL_DIR: "/s/ch",
      CLANKIE_CLAUDE_REPORT_DIR: "/s/rep",
    };
    expect(wrapperRun("claude-channel", env)).toEqual({
      status: 0,
      argv: ["worker", "claude-channel", "--channel-dir", "/s/ch"],
    });
    expect(wrapperRun("session-start-hook", env).argv).toEqual([
      "worker",
      "session-start-hook",
      "--report-dir",
      "/s/rep",
    ]);
    expect(wrapperRun("turn-hook", env).argv).toEqual(["worker", "turn-hook", "--report-dir", "/s/rep"]);
    expect(wrapperRun("question-hook", env).argv).toEqual(["worker", "question-hook", "--agent-state-dir", "/s/agent"]);
    expect(wrapperRun("claude-channel", { HOME: "/home/o" }).argv).toEqual([
      "worker",
      "claude-channel",
      "--channel-dir",
      "/home/o/.clankie/agent/claude/channels",
    ]);
    expect(wrapperRun("turn-hook", { HOME: "/home/o", CLANKIE_STATE_DIR: "/st" }).argv).toEqual([
      "worker",
      "turn-hook",
      "--report-dir",
      "/st/agent/claude/sessions",
    ]);
    expect(wrapperRun("rm -rf ~", env)).toEqual({ status: 1, argv: [] });
  });

  it("the wrapper is a POSIX shell script (sh -n)", () => {
    expect(() => execFileSync("sh", ["-n", WRAPPER])).not.toThrow();
  });
});

describe("the Claude launcher in plugin mode passes nothing twice (issue 12 item 4)", () => {
  it("rule 32: plugin mode opts in with --channels plugin:clankie-worker@clankie; --mcp-config has only the worker server and --settings no hooks; the pane's environment names the CLI and the agent's folders", async () => {
    const c = ctx();
    const plan = await new ClaudeLauncher().plan(req, c);
    expect(plan.argv.slice(-2)).toEqual(["--channels", "plugin:clankie-worker@clankie"]);
    expect(plan.argv).not.toContain("--dangerously-load-development-channels");
    expect(
      Object.keys(json<{ mcpServers: object }>(plan.argv[plan.argv.indexOf("--mcp-config") + 1]!).mcpServers),
    ).toEqual(["clankie"]);
    expect(json<object>(plan.argv[plan.argv.indexOf("--settings") + 1]!)).toEqual({});
    expect(plan.env).toEqual({
      CLANKIE_NODE: process.execPath,
      CLANKIE_CLI: expect.stringMatching(/\/dist\/cli\/main\.js$/),
      CLANKIE_AGENT_STATE_DIR: c.agentStateDir,
      CLANKIE_CLAUDE_CHANNEL_DIR: c.claudeChannelDir,
      CLANKIE_CLAUDE_REPORT_DIR: c.claudeReportDir,
    });
  });

  it("issue 12 item 4: the development launch carries its own channel and hooks and switches an installed clankie-worker plugin off for the session", async () => {
    const plan = await new ClaudeLauncher().plan(
      req,
      ctx({ claudeChannel: "development", workerToolApproval: "approve" }),
    );
    const settings = json<{ enabledPlugins?: unknown; hooks?: object; permissions?: unknown }>(
      plan.argv[plan.argv.indexOf("--settings") + 1]!,
    );
    expect(settings.enabledPlugins).toEqual({ "clankie-worker@clankie": false });
    expect(Object.keys(settings.hooks ?? {})).toEqual(["SessionStart", "UserPromptSubmit", "Stop", "PreToolUse"]);
    expect(settings.permissions).toBeDefined();
    expect(plan.env).toEqual({});
  });
});

describe("a refused plugin channel is a definite screen block (issue 12 item 3)", () => {
  // The lines as the pinned 2.1.197 draws them (captured in hire-claude-plugin-refused.test.ts).
  const banner = (why: string) =>
    ` ▎ Channels (experimental) messages from plugin:clankie-worker@clankie inject directly in this session · restart without --channels to stop\n ▎ plugin:clankie-worker@clankie · ${why}\n`;
  const launcher = new ClaudeLauncher();

  it("not on Anthropic's allowlist, or not on the org's: channel_plugin_not_allowed, with the development-channel and allowlist fixes", () => {
    for (const why of ["not on the approved channels allowlist", "not on your org's approved channels list"]) {
      const block = launcher.screenBlock(banner(why), "%3");
      expect(block).toMatchObject({ kind: "channel_plugin_not_allowed", definite: true });
      expect(block!.fix).toMatch(/claudeChannel: "development"/);
      expect(block!.fix).toMatch(/allowedChannelPlugins/);
    }
    // The 12 s notice's wording, wrapped by a narrow pane.
    expect(
      launcher.screenBlock(
        "plugin clankie-worker@clankie is not on the\napproved channels allowlist (use --dangerously-load-development-channels for local dev)",
        "%3",
      )?.kind,
    ).toBe("channel_plugin_not_allowed");
  });

  it("not installed: channel_plugin_not_installed, with the install command", () => {
    const block = launcher.screenBlock(banner("plugin not installed"), "%3");
    expect(block).toMatchObject({ kind: "channel_plugin_not_installed", definite: true });
    expect(block!.fix).toMatch(/clankie claude install-plugin/);
  });

  it("an accepted plugin channel, another plugin's refusal, and the development prompt are not a refusal", () => {
    expect(
      launcher.screenBlock(
        " ▎ Channels (experimental) messages from plugin:clankie-worker@clankie inject directly in this session",
        "%3",
      ),
    ).toBeUndefined();
    expect(
      launcher.screenBlock(" ▎ plugin:other@market · not on the approved channels allowlist", "%3"),
    ).toBeUndefined();
    expect(
      launcher.screenBlock("WARNING: Loading development channels\n❯ 1. I am using this for local development", "%3"),
    ).toMatchObject({ kind: "consent_required" });
    expect(
      launcher.screenBlock("WARNING: Loading development channels\n❯ 1. I am using this for local development", "%3")
        ?.definite,
    ).toBeUndefined();
  });
});
