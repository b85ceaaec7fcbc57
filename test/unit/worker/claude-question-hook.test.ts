/**
 * Claude Code's question hook (issue 13 part 4, rule 35: "questions go via plugin hooks bound to
 * pane, session and tool call; answers are hook JSON, never keys"). Only a main-session
 * PreToolUse of AskUserQuestion is delegated — permission prompts, other tools and events, and
 * subagents' questions never are; the answer is printed as hook JSON only when it answers exactly
 * the questions asked; with no agent, a refusal, or the bounded wait running out it prints
 * nothing, so Claude shows the owner its own dialog. The agent end is a real unix socket.
 */
import { mkdirSync, mkdtempSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { answerJson, questionRequest, runQuestionHook } from "../../../worker/claude-question-hook.js";
import { WORKER_SOCKET } from "../../../node-agent/worker-link/worker-endpoint.js";

const SESSION = "cf310781-e8a3-43c4-8660-59e5132b2fd2";
const Q = {
  question: "Which colour should the button be?",
  header: "Colour",
  options: [
    { label: "Red", description: "warm" },
    { label: "Blue", description: "cool" },
  ],
  multiSelect: false,
};
const input = (over: Record<string, unknown> = {}) => ({
  session_id: SESSION,
  prompt_id: "p-1",
  hook_event_name: "PreToolUse",
  tool_name: "AskUserQuestion",
  tool_input: { questions: [Q] },
  tool_use_id: "toolu_01",
  ...over,
});

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A real agent-side socket in DIR/worker/ that answers each request line with ANSWER (or never, when undefined). */
async function agentAt(
  answer: ((req: Record<string, unknown>) => Record<string, unknown>) | undefined,
): Promise<{ dir: string; requests: Record<string, unknown>[] }> {
  const dir = mkdtempSync(join(tmpdir(), "cqh-"));
  mkdirSync(join(dir, "worker"));
  const requests: Record<string, unknown>[] = [];
  const server = createServer((s: Socket) => {
    s.setEncoding("utf8");
    let buf = "";
    s.on("data", (d: string) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      const req = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      requests.push(req);
      if (answer) s.write(JSON.stringify(answer(req)) + "\n");
    });
    s.on("error", () => s.destroy());
  });
  await new Promise<void>((r) => server.listen(join(dir, "worker", WORKER_SOCKET), r));
  servers.push(server);
  return { dir, requests };
}

describe("the Claude question hook decides what it delegates (rule 35)", () => {
  it("rule 35: a main-session AskUserQuestion becomes one question request bound to session, prompt and tool call", () => {
    expect(questionRequest(input())).toEqual({
      op: "question",
      sessionId: SESSION,
      promptId: "p-1",
      toolUseId: "toolu_01",
      questions: [Q],
    });
  });

  it("rule 35: permission prompts, other tools, other events and subagents' questions are never delegated", () => {
    expect(questionRequest(input({ tool_name: "Bash", tool_input: { command: "rm -rf /" } }))).toBeUndefined();
    expect(questionRequest(input({ tool_name: "ExitPlanMode" }))).toBeUndefined();
    expect(questionRequest(input({ hook_event_name: "PermissionRequest" }))).toBeUndefined();
    expect(questionRequest(input({ hook_event_name: "PostToolUse" }))).toBeUndefined();
    expect(questionRequest(input({ agent_id: "agent-7" }))).toBeUndefined();
    expect(questionRequest(input({ tool_use_id: undefined }))).toBeUndefined();
    expect(questionRequest(input({ tool_input: {} }))).toBeUndefined();
  });

  it("rule 35: the answer is hook JSON (allow + updatedInput with the tool's input and answers) only when it answers exactly the questions asked", () => {
    const out = JSON.parse(answerJson(input(), { [Q.question]: "Blue" }));
    expect(out).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "allow",
        permissionDecisionReason: "answered by the hiring lead through Clankie",
        updatedInput: { questions: [Q], answers: { [Q.question]: "Blue" } },
      },
    });
    expect(answerJson(input(), {})).toBe("");
    expect(answerJson(input(), { [Q.question]: "Blue", "Another?": "x" })).toBe("");
    expect(answerJson(input(), { [Q.question]: ["Blue"] })).toBe("");
    expect(answerJson(input(), null)).toBe("");
  });
});

describe("the Claude question hook talks to the agent's worker socket (rule 35)", () => {
  it("rule 35: the agent's answer line is printed as hook JSON", async () => {
    const agent = await agentAt(() => ({ ok: true, answers: { [Q.question]: "Red" } }));
    const out = await runQuestionHook(agent.dir, JSON.stringify(input()), 5);
    expect(JSON.parse(out).hookSpecificOutput.updatedInput.answers).toEqual({ [Q.question]: "Red" });
    expect(agent.requests).toEqual([
      { op: "question", sessionId: SESSION, promptId: "p-1", toolUseId: "toolu_01", questions: [Q] },
    ]);
  });

  it("rule 35: a refusal (not hired, another session) prints nothing: the owner's dialog answers", async () => {
    const agent = await agentAt(() => ({ ok: false, reason: "not_hired", detail: "stays with the owner" }));
    expect(await runQuestionHook(agent.dir, JSON.stringify(input()), 5)).toBe("");
  });

  it("rule 35: the wait is bounded: no answer within --wait-seconds prints nothing", async () => {
    const agent = await agentAt(undefined);
    expect(await runQuestionHook(agent.dir, JSON.stringify(input()), 1)).toBe("");
    expect(agent.requests).toHaveLength(1);
  });

  it("rule 35: no agent listening, a tool that is not a question, or input that is not JSON prints nothing and asks nobody", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cqh-none-"));
    expect(await runQuestionHook(dir, JSON.stringify(input()), 1)).toBe("");
    const agent = await agentAt(() => ({ ok: true, answers: { [Q.question]: "Red" } }));
    expect(await runQuestionHook(agent.dir, JSON.stringify(input({ tool_name: "Bash" })), 1)).toBe("");
    expect(await runQuestionHook(agent.dir, "not json", 1)).toBe("");
    expect(await runQuestionHook(undefined, JSON.stringify(input()), 1)).toBe("");
    expect(agent.requests).toEqual([]);
  });
});
