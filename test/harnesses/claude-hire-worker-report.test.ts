/**
 * A hired Claude Code answers back (issue 12 item 5, issue 13 part 2; rule 48, scenario 22):
 * hire_agent launches the real Claude TUI in a new tmux pane with the worker MCP server
 * (`clankie worker mcp`, no token) in its --mcp-config beside the channel server. The brief,
 * pushed through the channel, asks for a report; the mock model answers that turn with a
 * mcp__clankie__message_clankie tool call; the agent proves the caller runs in the hired seat's
 * pane and the report is stored for the hiring conversation: the hiring lead reads it with
 * worker_reports, global-default and another conversation do not. The test sets the owner's
 * explicit hire option workerToolApproval: "approve" (docs/hire-agent.md) and plays the owner
 * confirming the development channel, as hire-claude.test.ts does.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { claudeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { askedIn, expectReportOnlyForHiring, hireReporter, type HiredReporter } from "./kit/hire-report.js";
import { reportToolUse } from "./kit/worker-report-fleet.js";
import { ownerConfirmsDevChannel } from "./kit/owner-confirms.js";

const bin = requireHarness("claude");
const TEXT = "hired claude report: done";

describe("a hired Claude Code reports to its hiring lead with message_clankie", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let h: HiredReporter;

  beforeAll(async () => {
    if (!bin)
      throw new Error("claude is not installed in .harnesses/claude: run `npm run harnesses:install -- claude`");
    assertBuilt();
    mock = await startMockAnthropicServer({ toolUse: reportToolUse, chainTools: true });
    env = claudeHireEnv(bin, mock.url);
    env.hire.workerToolApproval = "approve";
    h = await hireReporter("claude", env, TEXT, ownerConfirmsDevChannel);
  });
  afterAll(async () => {
    mock?.release();
    await h?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("rule 48: the brief turn's message_clankie is stored under the hired seat's binding for the hiring conversation only", async () => {
    let answer: Record<string, unknown> | undefined;
    for (let i = 0; i < 900 && !answer; i++) {
      // Claude 2.1.332 answers ToolSearch first (a user message with text): the ask may be the message before.
      const asked = (x: (typeof mock.requests)[number]) =>
        askedIn(x.latestUserText) ??
        (x.latestUserHasToolResult ? x.userTexts.slice(0, -1).map(askedIn).reverse().find(Boolean) : undefined);
      const r = mock.requests.find((x) => asked(x) === TEXT && x.turnToolResults.some((t) => t.includes("deliveryId")));
      const out = r && [...r.turnToolResults].reverse().find((t) => t.includes("deliveryId"));
      if (out) answer = JSON.parse(out.match(/\{.*\}/s)?.[0] ?? "{}") as Record<string, unknown>;
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
