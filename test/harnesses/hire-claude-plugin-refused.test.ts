/**
 * Issue 12 item 3 / inventory rule 32, what the pinned Claude Code 2.1.197 does with the default
 * plugin channel where the plugin is not approved: with only the tengu_harbor seed the
 * development-channel tests use, `--channels plugin:clankie-worker@clankie` starts the session
 * and the plugin's channel server, but its banner says "plugin:clankie-worker@clankie · not on the
 * approved channels allowlist" and Claude never registers the channel, so no native message could
 * ever arrive. The hire detects it and answers a typed not_ready with control.reason
 * channel_plugin_not_allowed and a fix naming claudeChannel "development" (or the org allowlist),
 * closes the pane it opened, and the brief never reaches the model. Without the plugin installed
 * the banner says "plugin not installed": not_ready with channel_plugin_not_installed.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudePluginHireEnv } from "./kit/claude-plugin.js";
import type { HireEnv } from "./kit/hire-envs.js";

const bin = requireHarness("claude");
const META = "clankie/seat-call";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function noProcessesLeft(fleet: HireFleet, hireId: string): Promise<number[]> {
  for (let i = 0; i < 100 && fleet.markedProcesses(hireId).length > 0; i++) await sleep(100);
  return fleet.markedProcesses(hireId);
}

for (const c of [
  {
    installed: true,
    reason: "channel_plugin_not_allowed",
    screen: /not on the approved channels allowlist/,
    fix: /claudeChannel: "development".*allowedChannelPlugins/s,
  },
  {
    installed: false,
    reason: "channel_plugin_not_installed",
    screen: /plugin not installed/,
    fix: /clankie claude install-plugin/,
  },
]) {
  describe.runIf(bin)(`hire_agent, rule 32 plugin mode refused (${c.reason}): a real Claude Code`, () => {
    let mock: MockAnthropicServer;
    let env: HireEnv;
    let fleet: HireFleet;
    beforeAll(async () => {
      mock = await startMockAnthropicServer();
      env = claudePluginHireEnv(bin!, mock.url, { allowlisted: false, install: c.installed });
      fleet = await startHireFleet("pglite", { hire: env.hire });
    });
    afterAll(async () => {
      await fleet?.close();
      await mock?.close();
      if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    });

    it(`issue 12 item 3: the default plugin channel is refused by Claude, and the hire answers not_ready with control.reason ${c.reason}, closes its pane, and sends no brief`, async () => {
      const hireId = randomUUID();
      const args = {
        harness: "claude",
        workingDirectory: env.work,
        title: "plugin worker",
        role: "r",
        brief: `never-${hireId.slice(0, 8)}`,
        model: env.model,
      };
      const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
      const body = res.structuredContent as { detail: string; control: { reason: string; fix: string } };
      expect(body, JSON.stringify(body)).toMatchObject({
        outcome: "failed",
        reason: "not_ready",
        hireId,
        launchCommitted: true,
        control: { reason: c.reason },
      });
      // The exact screen Claude showed is kept in the answer's detail.
      expect(body.detail).toMatch(c.screen);
      expect(body.control.fix).toMatch(c.fix);
      expect(fleet.panes().filter((p) => p.hire === hireId)).toEqual([]);
      expect(await noProcessesLeft(fleet, hireId)).toEqual([]);
      expect(mock.userMessagesContaining(args.brief)).toBe(0);
      // Issue 12 item 1: the same hireId again returns the same answer and launches nothing.
      const again = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
      expect(again.structuredContent).toMatchObject({
        outcome: "failed",
        reason: "not_ready",
        control: { reason: c.reason },
      });
      expect(fleet.panes().filter((p) => p.hire === hireId)).toEqual([]);
      expect(fleet.markedProcesses(hireId)).toEqual([]);
    });
  });
}
