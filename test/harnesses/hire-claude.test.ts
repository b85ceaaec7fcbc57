/**
 * hire_agent with the real Claude Code (pinned) in real tmux, against the mock Anthropic
 * server: the hire starts Claude with the Clankie channel and hooks, waits while the owner
 * confirms the development channel (this test plays the owner and presses Enter, as the
 * product never does), proves the seat over the channel socket and pushes the brief
 * through the channel; it reaches the model exactly once; a replay starts nothing;
 * message_seat then reaches the hired seat.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { hireScenario } from "./kit/hire-scenario.js";
import { ownerConfirmsDevChannel } from "./kit/owner-confirms.js";

const bin = requireHarness("claude");

describe.runIf(bin)("hire_agent: a real Claude Code in a new tmux pane", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = claudeHireEnv(bin!, mock.url);
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
    owner: ownerConfirmsDevChannel,
  });
});
