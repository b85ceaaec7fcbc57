/**
 * A hired OpenCode answers back (issue 12 item 5, issue 13 part 2; rule 48, scenario 22):
 * hire_agent runs the real OpenCode TUI with its own loopback server in a new tmux pane
 * (`opencode --port P --session S`), the worker MCP server (`clankie worker mcp`, no token) in
 * its OPENCODE_CONFIG_CONTENT, so that server runs in the pane's process tree (ADR 0040
 * addendum). The brief, sent through v1 prompt_async (the route whose turns are offered MCP
 * tools), reaches the model once and asks for a report; the mock model answers that turn with
 * a clankie_message_clankie tool call; the agent proves the caller runs in the hired seat's
 * pane and the report is stored for the hiring conversation: the hiring lead reads it with
 * worker_reports, global-default and another conversation do not.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { askedIn, expectReportOnlyForHiring, hireReporter, type HiredReporter } from "./kit/hire-report.js";
import { reportToolUse } from "./kit/worker-report-fleet.js";

const bin = requireHarness("opencode");
const TEXT = "hired opencode report: done";

describe("a hired OpenCode reports to its hiring lead with message_clankie", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let h: HiredReporter;

  beforeAll(async () => {
    if (!bin)
      throw new Error("opencode is not installed in .harnesses/opencode: run `npm run harnesses:install -- opencode`");
    assertBuilt();
    mock = await startMockAnthropicServer({ toolUse: reportToolUse });
    env = openCodeHireEnv(bin, mock.url);
    h = await hireReporter("opencode", env, TEXT);
  });
  afterAll(async () => {
    mock?.release();
    await h?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("issue 12 item 5: the brief reaches the model once, in a turn offered message_clankie", async () => {
    let turn;
    for (let i = 0; i < 600 && !turn; i++) {
      turn = mock.requests.find((x) => askedIn(x.latestUserText) === TEXT && x.toolNames.length > 0);
      if (!turn) await new Promise((res) => setTimeout(res, 100));
    }
    expect(turn?.toolNames).toContain("clankie_message_clankie");
    expect(mock.userMessagesContaining(TEXT)).toBe(1);
  });

  it("rule 48: the brief turn's message_clankie is stored under the hired seat's binding for the hiring conversation only", async () => {
    let answer: Record<string, unknown> | undefined;
    for (let i = 0; i < 900 && !answer; i++) {
      const r = mock.requests.find((x) => askedIn(x.latestUserText) === TEXT && x.turnToolResults.length > 0);
      if (r) answer = JSON.parse(r.turnToolResults.at(-1)!.match(/\{.*\}/s)?.[0] ?? "{}") as Record<string, unknown>;
      else await new Promise((res) => setTimeout(res, 100));
    }
    await expectReportOnlyForHiring(
      h,
      TEXT,
      answer ?? {
        seen: mock.requests.map((x) => ({
          last: x.latestUserText,
          tools: x.toolNames.filter((n) => n.includes("clankie")),
          results: x.turnToolResults,
        })),
      },
    );
  });
});
