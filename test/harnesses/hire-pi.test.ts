/**
 * hire_agent with the real Pi TUI (pinned) in real tmux, against the mock Anthropic server:
 * the hire opens one pane, the Clankie extension's socket makes it a seat, and the brief
 * goes in through the extension (never typed) and reaches the model exactly once; a replay
 * of the hireId starts nothing; message_seat then reaches the hired seat (ADR 0213, rule 52).
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { piHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { hireScenario } from "./kit/hire-scenario.js";

const bin = requireHarness("pi");

describe.runIf(bin)("hire_agent: a real Pi in a new tmux pane", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(bin!, mock.url);
  });
  afterAll(async () => {
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });
  hireScenario({
    harness: "pi",
    env: () => env,
    reached: (marker) => mock.userMessagesContaining(marker),
    waitForModel: (marker) => mock.waitForRequest(marker, 60_000).then(() => undefined),
  });
});
