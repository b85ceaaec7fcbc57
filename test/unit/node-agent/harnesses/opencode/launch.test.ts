/**
 * Issue 12 item 5 / issue 13 part 2 (ADR 0040 addendum): what the OpenCode hire gives the
 * pane's TUI so its own server starts the worker MCP server: `mcp.clankie` running
 * `clankie worker mcp` for the agent's state directory, no token anywhere, merged into the
 * OPENCODE_CONFIG_CONTENT the owner's hire environment may already carry (the owner's other
 * MCP servers and settings kept). Tool approval is the owner's: nothing is pre-allowed by
 * default; workerToolApproval "approve" allows exactly the report tools, never the peer tools.
 */
import { describe, expect, it } from "vitest";
import { openCodeConfigContent } from "../../../../../node-agent/harnesses/opencode/launch.js";
import type { LaunchContext } from "../../../../../node-agent/hire/launcher.js";

function ctx(
  env: Record<string, string> = {},
  workerToolApproval: LaunchContext["workerToolApproval"] = "owner",
): LaunchContext {
  return {
    bin: "/bin/true",
    hireDir: "/tmp/h",
    claudeChannelDir: "/tmp/c",
    claudeReportDir: "/tmp/r",
    piSocketDir: "/tmp/p",
    claudeChannel: "development",
    agentStateDir: "/tmp/agent-state",
    workerToolApproval,
    env,
  };
}

type Config = { mcp: Record<string, { type: string; command: string[]; enabled: boolean }>; [k: string]: unknown };

describe("OpenCode launcher: the worker server in OPENCODE_CONFIG_CONTENT", () => {
  it("issue 13 part 2: mcp.clankie runs `clankie worker mcp --agent-state-dir <agent>` as a local server, with no token", () => {
    const content = openCodeConfigContent(ctx());
    const config = JSON.parse(content) as Config;
    expect(Object.keys(config.mcp)).toEqual(["clankie"]);
    expect(config.mcp.clankie).toMatchObject({ type: "local", enabled: true });
    expect(config.mcp.clankie!.command.slice(-4)).toEqual(["worker", "mcp", "--agent-state-dir", "/tmp/agent-state"]);
    expect(content).not.toMatch(/token/i);
    expect(config.permission).toBeUndefined();
  });

  it("issue 13 part 2: the owner's workerToolApproval \"approve\" allows exactly the report tools, beside the owner's rules", () => {
    const owner = JSON.stringify({ permission: { bash: "ask" } });
    const config = JSON.parse(openCodeConfigContent(ctx({ OPENCODE_CONFIG_CONTENT: owner }, "approve"))) as Config;
    expect(config.permission).toEqual({
      bash: "ask",
      clankie_message_clankie: "allow",
      clankie_message_clankie_status: "allow",
    });
    // A single action the owner set for every tool is the owner's, and stays.
    const all = JSON.parse(
      openCodeConfigContent(ctx({ OPENCODE_CONFIG_CONTENT: JSON.stringify({ permission: "ask" }) }, "approve")),
    ) as Config;
    expect(all.permission).toBe("ask");
  });

  it("issue 12 item 5: the owner's own OPENCODE_CONFIG_CONTENT is kept, its MCP servers beside ours", () => {
    const owner = JSON.stringify({
      model: "mock/mock-model",
      mcp: { docs: { type: "remote", url: "http://127.0.0.1:1/mcp", enabled: true } },
    });
    const config = JSON.parse(openCodeConfigContent(ctx({ OPENCODE_CONFIG_CONTENT: owner }))) as Config;
    expect(config.model).toBe("mock/mock-model");
    expect(Object.keys(config.mcp).sort()).toEqual(["clankie", "docs"]);
  });

  it("issue 12 item 5: an owner value that is not a JSON object is replaced by ours alone", () => {
    for (const bad of ["not json", "[1,2]", "null"]) {
      const config = JSON.parse(openCodeConfigContent(ctx({ OPENCODE_CONFIG_CONTENT: bad }))) as Config;
      expect(Object.keys(config)).toEqual(["mcp"]);
      expect(Object.keys(config.mcp)).toEqual(["clankie"]);
    }
  });
});
