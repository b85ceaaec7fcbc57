/**
 * Issue 12 item 5 / issue 13 part 2: what the hire launchers give a hired worker so it can
 * answer back. Claude's --mcp-config carries `clankie worker mcp` beside the channel server,
 * bound to the agent's state directory, with no token anywhere in the argv or config; its
 * tools are pre-allowed only under the owner's explicit workerToolApproval: "approve" (the
 * default adds no approval). Codex (ADR 0040 addendum) gets its own app-server in the pane,
 * which carries the worker server and the hire's config as `-c` overrides; the TUI gets none.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClaudeLauncher } from "../../../../node-agent/harnesses/claude/launch.js";
import { CodexLauncher, privateSocketPath, tomlString } from "../../../../node-agent/harnesses/codex/launch.js";
import type { LaunchContext } from "../../../../node-agent/hire/launcher.js";

function ctx(o: Partial<LaunchContext> = {}): LaunchContext {
  const root = mkdtempSync(join(tmpdir(), "launch-worker-mcp-"));
  return {
    bin: "/bin/true",
    hireDir: root,
    claudeChannelDir: join(root, "ch"),
    claudeReportDir: join(root, "rep"),
    piSocketDir: join(root, "pi"),
    claudeChannel: "development",
    agentStateDir: join(root, "agent"),
    workerToolApproval: "owner",
    env: {},
    ...o,
  };
}
const req = { hireId: "h-1", workingDirectory: "/tmp", title: "t" };

describe("hire launchers give the hired worker the worker MCP server", () => {
  it("issue 13 part 2: Claude's --mcp-config runs `clankie worker mcp` for the agent's state dir beside the channel, with no token, and pre-allows nothing by default", async () => {
    const c = ctx();
    const plan = await new ClaudeLauncher().plan(req, c);
    const config = JSON.parse(readFileSync(plan.argv[plan.argv.indexOf("--mcp-config") + 1]!, "utf8")) as {
      mcpServers: Record<string, { command: string; args: string[] }>;
    };
    expect(Object.keys(config.mcpServers).sort()).toEqual(["clankie", "clankie-seat"]);
    expect(config.mcpServers.clankie!.args.slice(-4)).toEqual(["worker", "mcp", "--agent-state-dir", c.agentStateDir]);
    const everything = JSON.stringify([plan.argv, config, plan.env]);
    expect(everything).not.toMatch(/token/i);
    const settings = JSON.parse(readFileSync(plan.argv[plan.argv.indexOf("--settings") + 1]!, "utf8")) as {
      permissions?: unknown;
    };
    expect(settings.permissions).toBeUndefined();
  });

  it("issue 13 part 2: the owner's workerToolApproval \"approve\" pre-allows exactly the report tools in Claude's settings", async () => {
    const plan = await new ClaudeLauncher().plan(req, ctx({ workerToolApproval: "approve" }));
    const settings = JSON.parse(readFileSync(plan.argv[plan.argv.indexOf("--settings") + 1]!, "utf8")) as {
      permissions?: { allow: string[] };
    };
    expect(settings.permissions).toEqual({
      allow: ["mcp__clankie__message_clankie", "mcp__clankie__message_clankie_status"],
    });
  });

  it("ADR 0040 addendum, issue 13 part 2: Codex runs the pane runner, whose private app-server carries `clankie worker mcp` (no token), the model, the effort and the question feature; the TUI gets no override", async () => {
    const c = ctx();
    const plan = await new CodexLauncher().plan({ ...req, model: "gpt-x", effort: "high" }, c);
    expect(plan.argv[0]).toBe(process.execPath);
    expect(plan.argv[1]).toMatch(/codex\/pane-runner\.js$/);
    const spec = JSON.parse(readFileSync(plan.argv[2]!, "utf8")) as {
      bin: string;
      socketPath: string;
      serverArgs: string[];
      tuiArgs: string[];
    };
    expect(spec.bin).toBe("/bin/true");
    expect(spec.socketPath.startsWith(c.hireDir)).toBe(true);
    expect(spec.tuiArgs).toEqual(["-C", "/tmp"]);
    const overrides = spec.serverArgs.filter((_, i) => spec.serverArgs[i - 1] === "-c");
    expect(spec.serverArgs.filter((a) => a === "-c")).toHaveLength(overrides.length);
    expect(overrides).toEqual([
      `mcp_servers.clankie.command=${JSON.stringify(process.execPath)}`,
      expect.stringMatching(/^mcp_servers\.clankie\.args=\[.*"worker", "mcp", "--agent-state-dir", ".*agent"\]$/),
      'model="gpt-x"',
      'model_reasoning_effort="high"',
      "features.default_mode_request_user_input=true",
    ]);
    expect(JSON.stringify([plan, spec])).not.toMatch(/token/i);
  });

  it('issue 13 part 2: the owner\'s workerToolApproval "approve" pre-approves exactly the report tools on the Codex app-server, never peers', async () => {
    const plan = await new CodexLauncher().plan(req, ctx({ workerToolApproval: "approve" }));
    const spec = JSON.parse(readFileSync(plan.argv[2]!, "utf8")) as { serverArgs: string[] };
    const approvals = spec.serverArgs.filter((a) => a.includes("approval_mode"));
    expect(approvals).toEqual([
      'mcp_servers.clankie.tools.message_clankie.approval_mode="approve"',
      'mcp_servers.clankie.tools.message_clankie_status.approval_mode="approve"',
    ]);
  });

  it("ADR 0040 addendum: a too-long hire folder puts the private socket in a short per-user folder; values are TOML-escaped (DEL included)", () => {
    expect(Buffer.byteLength(privateSocketPath(join("/tmp", "x".repeat(120)), "AB-12"))).toBeLessThanOrEqual(100);
    expect(privateSocketPath(join("/tmp", "x".repeat(120)), "AB-12")).toMatch(/clankie-codex-[^/]+\/ab-12\.sock$/);
    expect(tomlString('a"b\\c\x7f\n')).toBe('"a\\"b\\\\c\\u007f\\n"');
  });
});
