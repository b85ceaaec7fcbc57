/**
 * hire_agent with the real OpenCode (pinned) in real tmux, against the mock Anthropic
 * server (issue 12): the hire creates the session in the working directory with a
 * short-lived, password-protected `opencode serve`, stops it, and runs the TUI with its own
 * loopback server in the new pane (`opencode --port P --hostname 127.0.0.1 --session S`);
 * it proves the seat over that server and sends the brief through v1 prompt_async with our
 * message id (never typed); it reaches the model exactly once; a replay starts nothing (no
 * second pane, no second process: nothing the hire started runs outside the pane);
 * message_seat then reaches the hired seat.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { hireScenario } from "./kit/hire-scenario.js";

const bin = requireHarness("opencode");

describe.runIf(bin)("hire_agent: a real OpenCode in a new tmux pane", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = openCodeHireEnv(bin!, mock.url);
  });
  afterAll(async () => {
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });
  hireScenario({
    harness: "opencode",
    env: () => env,
    reached: (marker) => mock.userMessagesContaining(marker),
    waitForModel: (marker) => mock.waitForRequest(marker, 60_000).then(() => undefined),
  });
});
