/**
 * Issue 12 item 2 / inventory rule 32, plugin mode (the default claudeChannel): the real Claude
 * Code (pinned) in real tmux against the mock Anthropic server, with the shipped clankie-worker
 * plugin installed into its CLAUDE_CONFIG_DIR by `clankie claude install-plugin` and launched with
 * `--channels plugin:clankie-worker@clankie`. TEST-ONLY: the plugin is put on the cached channel
 * allowlist (kit/claude-plugin.ts), standing in for Anthropic or an org approving it; without that
 * the pinned Claude refuses it (hire-claude-plugin-refused.test.ts). No owner answers anything:
 * plugin mode shows no development-channel prompt. The hire scenario: the brief reaches the model
 * exactly once through the plugin's channel, a replay starts nothing, message_seat arrives; and
 * the hire's own files carry neither the channel server nor the hooks again.
 */
import { readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import type { HireFleet } from "../kit/hire-fleet.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudePluginHireEnv } from "./kit/claude-plugin.js";
import type { HireEnv } from "./kit/hire-envs.js";
import { hireScenario } from "./kit/hire-scenario.js";

const bin = requireHarness("claude");

describe.runIf(bin)(
  "hire_agent, rule 32 plugin mode: a real Claude Code with the clankie-worker plugin in a new tmux pane",
  () => {
    let mock: MockAnthropicServer;
    let env: HireEnv & { configDir: string; installOutput: string };
    let fleet: HireFleet | undefined;
    beforeAll(async () => {
      // Claude 2.1.332 defers MCP tools and names them only after a tool's result: the brief's turn searches for
      // the worker tool once, so the next request carries the deferred list the one-worker-server check reads.
      mock = await startMockAnthropicServer({
        toolUse: (r) =>
          /brief-[0-9a-f]{8}: say hello/.test(r.latestUserText) && r.deferredToolNames.length === 0
            ? { name: "ToolSearch", input: { query: "message_clankie", max_results: 5 } }
            : undefined,
      });
      env = claudePluginHireEnv(bin!, mock.url, { allowlisted: true });
    });
    afterAll(async () => {
      await mock?.close();
      if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    });

    it("issue 12 item 2: `clankie claude install-plugin` installed clankie-worker@clankie with the real claude plugin commands", () => {
      expect(JSON.parse(env.installOutput.trim().split("\n").pop()!)).toMatchObject({
        plugin: "clankie-worker@clankie",
        installed: true,
        configDir: env.configDir,
      });
      const installed = JSON.parse(readFileSync(join(env.configDir, "plugins/installed_plugins.json"), "utf8")) as {
        plugins: Record<string, unknown[]>;
      };
      expect(Object.keys(installed.plugins)).toEqual(["clankie-worker@clankie"]);
      expect(env.hire.claudeChannel).toBeUndefined();
    });

    hireScenario({
      harness: "claude",
      env: () => env,
      reached: (marker) => mock.userMessagesContaining(marker),
      waitForModel: (marker) => mock.waitForRequest(marker, 60_000).then(() => undefined),
      owner: (f) => {
        fleet = f;
        return () => undefined;
      },
    });

    it("rule 32, issue 12 item 4: the brief came through the plugin's channel, and the hire passed neither the channel server nor the hooks a second time", () => {
      const brief = mock.requests.find((r) => /brief-[0-9a-f]{8}: say hello/.test(r.latestUserText));
      expect(brief?.latestUserText).toMatch(/<channel source="plugin:clankie-worker:clankie-seat"/);
      // One worker server: the worker tool is offered once, under the hire's --mcp-config name. Claude 2.1.332
      // defers MCP tools: after the brief's search for "message_clankie" every server's match is loaded into `tools`
      // and the rest are named in the deferred list, so a second worker server's tool would show in one or the other.
      const listed = mock.requests
        .filter((r) => /brief-[0-9a-f]{8}: say hello/.test(r.latestUserText))
        .find((r) => r.deferredToolNames.length > 0);
      expect(listed?.toolNames.filter((t) => t.endsWith("__message_clankie"))).toEqual([
        "mcp__clankie__message_clankie",
      ]);
      const hires = join(fleet!.agentStateDir, "hires");
      const [dir] = readdirSync(hires);
      const mcp = JSON.parse(readFileSync(join(hires, dir!, "mcp.json"), "utf8")) as {
        mcpServers: Record<string, unknown>;
      };
      expect(Object.keys(mcp.mcpServers)).toEqual(["clankie"]);
      const settings = JSON.parse(readFileSync(join(hires, dir!, "settings.json"), "utf8")) as { hooks?: unknown };
      expect(settings.hooks).toBeUndefined();
      // One channel server and one session report for the one Claude (the plugin's, fed the agent's folders).
      const channels = readdirSync(join(fleet!.agentStateDir, "claude/channels")).filter((f) => f.endsWith(".sock"));
      expect(channels).toHaveLength(1);
      const reports = readdirSync(join(fleet!.agentStateDir, "claude/sessions"));
      expect(reports.filter((f) => f.endsWith(".session.json"))).toEqual([
        channels[0]!.replace(".sock", ".session.json"),
      ]);
    });
  },
);
