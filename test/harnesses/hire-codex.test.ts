/**
 * hire_agent with the real Codex TUI (pinned) in real tmux, against the mock Responses
 * server: the pane runs the hire's private `codex app-server --listen unix://SOCK` and the TUI
 * on `--remote unix://SOCK` (ADR 0040 addendum); the agent proves the seat on that socket and
 * queues the brief there (never typed); it reaches the model exactly once; a replay of the
 * hireId starts nothing; message_seat then reaches the hired seat. The hired seat is owned
 * (rules 36, 47): [steer, queue] + interrupt.
 */
import { afterAll, beforeAll, describe } from "vitest";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { codexHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { hireScenario } from "./kit/hire-scenario.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");

describe.runIf(bin)("hire_agent: a real Codex in a new tmux pane", () => {
  let mock: MockResponsesServer;
  let env: HireEnv;
  beforeAll(async () => {
    mock = await startMockResponsesServer();
    env = codexHireEnv(bin!, mock.baseUrl);
  });
  afterAll(async () => {
    if (env)
      cleanupCodexEnv(bin!, {
        root: env.root,
        home: env.hire.env!.HOME!,
        codexHome: env.hire.env!.CODEX_HOME!,
        workDir: env.work,
        env: { ...env.hire.env },
      });
    await mock?.close();
  });
  hireScenario({
    harness: "codex",
    env: () => env,
    reached: (marker) => mock.maxCopiesInOneRequest(marker),
    waitForModel: (marker) => mock.waitFor((r) => r.lastUserText.includes(marker)).then(() => undefined),
    // Rules 36 and 47: the TUI this agent's hire launched is owned, so it is offered a stop.
    capabilities: { deliveryModes: ["steer", "queue"], interrupt: true, nextTurnOnly: false },
  });
});
