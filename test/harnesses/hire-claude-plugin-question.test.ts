/**
 * Issue 12 (plugin mode) with issue 13 part 4 / rule 35: hire_agent launches the real Claude Code
 * (pinned, real tmux, mock Anthropic server) with `--channels plugin:clankie-worker@clankie`, so
 * the AskUserQuestion PreToolUse hook is the installed plugin's (its wrapper runs
 * `clankie worker question-hook` with the agent's state dir from the pane's environment), not the
 * launcher's. The brief turn's question reaches the hiring conversation only; the lead's
 * message_seat{questionAnswer} is the hook's JSON, delivered with the transcript's tool_result
 * receipt. TEST-ONLY: the plugin seeded on the cached channel allowlist (kit/claude-plugin.ts); no
 * owner answers anything.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { requireHarness } from "./kit/harness-bin.js";
import type { HireEnv } from "./kit/hire-envs.js";
import { claudePluginHireEnv } from "./kit/claude-plugin.js";
import { expectQuestionAnsweredByHiringLead } from "./kit/claude-question-answer.js";

const bin = requireHarness("claude");
const ASK = "[ask]";
const QUESTION = {
  question: "Which database should the service use?",
  header: "Database",
  options: [
    { label: "PostgreSQL", description: "shared" },
    { label: "SQLite", description: "local" },
  ],
  multiSelect: false,
};

describe("rule 35 in plugin mode: a hired Claude Code's AskUserQuestion reaches its hiring lead through the clankie-worker plugin's question hook", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  let hiring: LeadClient;
  let other: LeadClient;
  let seat: string;

  beforeAll(async () => {
    if (!bin)
      throw new Error("claude is not installed in .harnesses/claude: run `npm run harnesses:install -- claude`");
    assertBuilt();
    mock = await startMockAnthropicServer({
      toolUse: (r) =>
        r.latestUserText.includes(ASK) && r.toolNames.includes("AskUserQuestion")
          ? { name: "AskUserQuestion", input: { questions: [QUESTION] } }
          : undefined,
    });
    env = claudePluginHireEnv(bin, mock.url, { allowlisted: true });
    fleet = await startHireFleet("pglite", { hire: env.hire });
    hiring = await fleet.leadFor("hiring-lead");
    other = await fleet.leadFor("other-lead");
    const res = await hiring.call("hire_agent", {
      harness: "claude",
      workingDirectory: env.work,
      title: "claude asker",
      role: "asker",
      brief: `${ASK} choose the database`,
      model: env.model,
    });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "spawned" });
    seat = res.structuredContent!.seat as string;
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("rule 35, issue 12 (plugin mode): the brief turn's question is filed for the hiring conversation only, and its answer reaches the model as the hook's JSON", async () => {
    await expectQuestionAnsweredByHiringLead({
      hiring,
      others: [other, fleet.lead],
      seat,
      mock,
      question: QUESTION.question,
    });
  });
});
