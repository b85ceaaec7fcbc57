/**
 * The Claude question's two ends at the agent (issue 13 part 4, rules 35 and 39): the hook's
 * request line is checked before anything is proved or filed (session, tool call, bounded
 * questions; two equal question texts could not be told apart, since Claude keys answers by
 * text); and the receipt is the transcript's tool_result for that exact tool_use id, with the
 * answers Claude recorded — the lines below are shaped as 2.1.197 writes them (observed).
 */
import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseClaudeAsk } from "../../../../../node-agent/harnesses/claude/ask-wire.js";
import { readClaudeAnswerReceipt } from "../../../../../node-agent/harnesses/claude/answer-receipt.js";

const SESSION = "cf310781-e8a3-43c4-8660-59e5132b2fd2";
const Q = {
  question: "Which colour?",
  header: "Colour",
  options: [{ label: "Red", description: "warm" }],
  multiSelect: false,
};
const ask = (over: Record<string, unknown> = {}) => ({
  op: "question",
  sessionId: SESSION,
  promptId: "p-1",
  toolUseId: "toolu_01",
  questions: [Q],
  ...over,
});

describe("the question hook's request line (rule 35)", () => {
  it("rule 35: a well-formed AskUserQuestion is bound to session, prompt and tool call", () => {
    expect(parseClaudeAsk(ask())).toEqual({
      sessionId: SESSION,
      promptId: "p-1",
      toolUseId: "toolu_01",
      questions: [Q],
    });
    expect(parseClaudeAsk(ask({ questions: [{ question: "Free?", multiSelect: true }] }))).toEqual({
      sessionId: SESSION,
      promptId: "p-1",
      toolUseId: "toolu_01",
      questions: [{ question: "Free?", header: "", options: [], multiSelect: true }],
    });
  });

  it("rule 35: an unsafe session or tool id, no questions, too many, or two equal texts are bad requests", () => {
    expect(parseClaudeAsk(ask({ sessionId: "../../etc" }))).toBeUndefined();
    expect(parseClaudeAsk(ask({ toolUseId: "toolu 01; rm" }))).toBeUndefined();
    expect(parseClaudeAsk(ask({ questions: [] }))).toBeUndefined();
    expect(
      parseClaudeAsk(ask({ questions: Array.from({ length: 21 }, (_, i) => ({ question: `q${i}` })) })),
    ).toBeUndefined();
    expect(parseClaudeAsk(ask({ questions: [Q, Q] }))).toBeUndefined();
    expect(parseClaudeAsk(ask({ questions: [{ question: "x".repeat(5000) }] }))).toBeUndefined();
    expect(parseClaudeAsk(ask({ questions: [{ question: "ok", options: [{ label: 3 }] }] }))).toBeUndefined();
  });
});

describe("the transcript receipt of a Claude question (rule 39)", () => {
  const transcript = () => {
    const dir = mkdtempSync(join(tmpdir(), "cqr-"));
    const path = join(dir, `${SESSION}.jsonl`);
    writeFileSync(
      path,
      JSON.stringify({
        type: "assistant",
        uuid: "a-1",
        message: {
          content: [{ type: "tool_use", id: "toolu_01", name: "AskUserQuestion", input: { questions: [Q] } }],
        },
      }) + "\n",
    );
    return path;
  };
  const resultLine = (
    toolUseId: string,
    answers: Record<string, string> | undefined,
    content = "Your questions have been answered",
  ) =>
    JSON.stringify({
      type: "user",
      uuid: `u-${toolUseId}`,
      message: { role: "user", content: [{ type: "tool_result", content, tool_use_id: toolUseId }] },
      ...(answers ? { toolUseResult: { questions: [Q], answers } } : {}),
    }) + "\n";

  it("rule 39: no tool_result yet is no receipt (the tool_use line alone proves nothing)", () => {
    expect(readClaudeAnswerReceipt(transcript(), "toolu_01")).toBeUndefined();
    expect(readClaudeAnswerReceipt("/nonexistent/transcript.jsonl", "toolu_01")).toBeUndefined();
  });

  it("rule 39: the tool_result for the exact tool_use id is the receipt, with the answers the model was given", () => {
    const path = transcript();
    appendFileSync(path, resultLine("toolu_other", { [Q.question]: "Blue" }));
    appendFileSync(path, resultLine("toolu_01", { [Q.question]: "Red" }));
    expect(readClaudeAnswerReceipt(path, "toolu_01")).toEqual({
      toolUseId: "toolu_01",
      uuid: "u-toolu_01",
      answers: { [Q.question]: "Red" },
      content: "Your questions have been answered",
    });
  });

  it("rule 39: an owner's decline or interrupt is a receipt without answers; a half-written last line is skipped", () => {
    const path = transcript();
    appendFileSync(path, resultLine("toolu_01", undefined, "The user doesn't want to proceed"));
    appendFileSync(path, '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_02"');
    expect(readClaudeAnswerReceipt(path, "toolu_01")).toMatchObject({
      answers: undefined,
      content: "The user doesn't want to proceed",
    });
    expect(readClaudeAnswerReceipt(path, "toolu_02")).toBeUndefined();
  });
});
