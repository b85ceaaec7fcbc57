/**
 * Issue 13 part 4 with a hired real Claude Code (rule 35): hire_agent launches the Claude TUI
 * with the launcher's PreToolUse hook for AskUserQuestion (`clankie worker question-hook`,
 * node-agent/harnesses/claude/launch.ts). The brief's own turn asks a question — often before the
 * hire is decided, which the controller waits for (bounded) — and the question reaches the
 * hiring conversation only; its message_seat{questionAnswer} is the hook's JSON, `delivered`
 * with the transcript's tool_result receipt, and the model got exactly that answer. The test
 * plays the owner confirming the development channel, as hire-claude.test.ts does.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { ownerConfirmsDevChannel } from "./kit/owner-confirms.js";
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

describe("a hired Claude Code's AskUserQuestion reaches its hiring lead through the launcher's question hook", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  let stopOwner: () => void;
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
    env = claudeHireEnv(bin, mock.url);
    fleet = await startHireFleet("pglite", { hire: env.hire });
    stopOwner = ownerConfirmsDevChannel(fleet);
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
    stopOwner?.();
    mock?.release();
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("rule 35: the brief turn's question is filed for the hiring conversation only, and its answer reaches the model as the hook's JSON", async () => {
    await expectQuestionAnsweredByHiringLead({
      hiring,
      others: [other, fleet.lead],
      seat,
      mock,
      question: QUESTION.question,
    });
  });
});
