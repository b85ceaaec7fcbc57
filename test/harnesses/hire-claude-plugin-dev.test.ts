/**
 * Issue 12 item 4 / inventory rule 32: a development-channel hire (claudeChannel "development")
 * on a machine where the owner installed the clankie-worker plugin. The plugin's channel server
 * and hooks would also run in every session it is enabled for, so the hire switches it off for
 * its session (enabledPlugins in its --settings): the real Claude (pinned, real tmux, mock
 * Anthropic server; the owner confirms the development prompt, as the product never does) runs
 * one channel server and files one session report, the brief arrives once from the hire's own
 * clankie-seat server, and the hire scenario (replay, list_seats, message_seat) holds. The pane's
 * environment names a recorder as the CLI the plugin's wrapper would run, so any plugin server or
 * hook that ran in that session would leave a line.
 */
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import type { HireFleet } from "../kit/hire-fleet.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudePluginHireEnv } from "./kit/claude-plugin.js";
import type { HireEnv } from "./kit/hire-envs.js";
import { hireScenario } from "./kit/hire-scenario.js";
import { ownerConfirmsDevChannel } from "./kit/owner-confirms.js";

const bin = requireHarness("claude");

describe.runIf(bin)(
  "hire_agent, rule 32 development mode beside an installed clankie-worker plugin: a real Claude Code",
  () => {
    let mock: MockAnthropicServer;
    let env: HireEnv;
    let fleet: HireFleet | undefined;
    let ran = "";
    beforeAll(async () => {
      // Claude 2.1.332 defers MCP tools and names them only after a tool's result: the brief's turn searches for
      // the worker tool once, so the next request carries the deferred list the one-worker-server check reads.
      mock = await startMockAnthropicServer({
        toolUse: (r) =>
          /brief-[0-9a-f]{8}: say hello/.test(r.latestUserText) && r.deferredToolNames.length === 0
            ? { name: "ToolSearch", input: { query: "message_clankie", max_results: 5 } }
            : undefined,
      });
      const plugin = claudePluginHireEnv(bin!, mock.url, { allowlisted: true });
      ran = join(plugin.root, "plugin-ran.log");
      const recorder = join(plugin.root, "plugin-recorder.mjs");
      writeFileSync(
        recorder,
        `import { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(ran)}, process.argv.slice(2).join(" ") + "\\n");\n`,
      );
      env = {
        ...plugin,
        hire: {
          ...plugin.hire,
          claudeChannel: "development",
          env: { ...plugin.hire.env, CLANKIE_NODE: process.execPath, CLANKIE_CLI: recorder },
        },
      };
    });
    afterAll(async () => {
      await mock?.close();
      if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    });

    hireScenario({
      harness: "claude",
      env: () => env,
      reached: (marker) => mock.userMessagesContaining(marker),
      waitForModel: (marker) => mock.waitForRequest(marker, 60_000).then(() => undefined),
      owner: (f) => {
        fleet = f;
        return ownerConfirmsDevChannel(f);
      },
    });

    it("issue 12 item 4: the installed plugin stays off for the development hire: one channel server, one session report, the brief from the hire's clankie-seat", () => {
      expect(existsSync(ran) ? readFileSync(ran, "utf8") : "").toBe("");
      const brief = mock.requests.find((r) => /brief-[0-9a-f]{8}: say hello/.test(r.latestUserText));
      expect(brief?.latestUserText).toMatch(/<channel source="clankie-seat"/);
      // One worker server: the worker tool is offered once, under the hire's --mcp-config name. Claude 2.1.332
      // defers MCP tools: after the brief's search for "message_clankie" every server's match is loaded into `tools`
      // and the rest are named in the deferred list, so a second worker server's tool would show in one or the other.
      const listed = mock.requests
        .filter((r) => /brief-[0-9a-f]{8}: say hello/.test(r.latestUserText))
        .find((r) => r.deferredToolNames.length > 0);
      expect(listed?.toolNames.filter((t) => t.endsWith("__message_clankie"))).toEqual([
        "mcp__clankie__message_clankie",
      ]);
      const channels = readdirSync(join(fleet!.agentStateDir, "claude/channels")).filter((f) => f.endsWith(".sock"));
      expect(channels).toHaveLength(1);
      const reports = readdirSync(join(fleet!.agentStateDir, "claude/sessions")).filter((f) =>
        f.endsWith(".session.json"),
      );
      expect(reports).toEqual([channels[0]!.replace(".sock", ".session.json")]);
    });
  },
);
