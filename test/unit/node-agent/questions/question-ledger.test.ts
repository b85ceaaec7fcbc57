/**
 * The question-answer fence on a real directory (issue 13 part 4, rules 14 and 39): one claim per
 * native question; an unsettled or uncertain claim refuses a second answer, as does a torn claim
 * file (it cannot prove the answer was not sent); only an exact not_sent releases it. The
 * answers' check refuses unknown question ids, empty answers and oversized answers.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QuestionLedger } from "../../../../node-agent/questions/question-ledger.js";
import { badAnswer, MAX_ANSWER_BYTES, type WorkerQuestion } from "../../../../node-agent/harnesses/codex/questions.js";
import { sameAnswers } from "../../../../node-agent/harnesses/codex/answer-receipt.js";

const key = { threadId: "t", turnId: "u", itemId: "call_1" };

describe("QuestionLedger", () => {
  it("one claim per question: a second sees the first, sending or uncertain", () => {
    const dir = mkdtempSync(join(tmpdir(), "ql-"));
    const l = new QuestionLedger(dir);
    expect(l.claim(key, '{"a":1}', 1)).toEqual({ ok: true });
    expect(l.claim(key, '{"a":2}', 2)).toMatchObject({
      ok: false,
      existing: { state: "sending", answerJson: '{"a":1}' },
    });
    l.settle(key, { state: "uncertain", reason: "connection_lost", answerJson: '{"a":1}', atMs: 3 });
    expect(new QuestionLedger(dir).claim(key, '{"a":2}', 4)).toMatchObject({
      ok: false,
      existing: { state: "uncertain" },
    });
    // A different call in the same turn is a different question.
    expect(l.claim({ ...key, itemId: "call_2" }, "{}", 5)).toEqual({ ok: true });
  });

  it("only an exact not_sent releases the claim", () => {
    const l = new QuestionLedger(mkdtempSync(join(tmpdir(), "ql-")));
    l.claim(key, "{}", 1);
    l.settle(key, { state: "not_sent", reason: "connection_closed", answerJson: "{}", atMs: 2 });
    expect(l.claim(key, '{"b":1}', 3)).toEqual({ ok: true });
    expect(l.read(key)).toMatchObject({ state: "sending", answerJson: '{"b":1}' });
  });

  it("a torn claim file fences: it cannot prove nothing was sent", () => {
    const dir = mkdtempSync(join(tmpdir(), "ql-"));
    const l = new QuestionLedger(dir);
    l.claim(key, "{}", 1);
    writeFileSync(join(dir, readdirSync(dir)[0]!), '{"state":"sen');
    expect(l.claim(key, "{}", 2)).toMatchObject({ ok: false, unreadable: expect.any(String) });
  });
});

describe("answers", () => {
  const q = {
    questions: [{ id: "colour", header: "", question: "?", isOther: false, options: null }],
  } as unknown as WorkerQuestion;
  it("every question answered by id with non-empty strings, within the bound", () => {
    expect(badAnswer(q, { colour: { answers: ["Red"] } })).toBeUndefined();
    expect(badAnswer(q, { size: { answers: ["L"] }, colour: { answers: ["Red"] } })).toMatch(
      /no question has id "size"/,
    );
    expect(badAnswer(q, { colour: { answers: [] } })).toMatch(/at least one/);
    expect(badAnswer(q, {})).toMatch(/at least one/);
    expect(badAnswer(q, { colour: { answers: ["x".repeat(MAX_ANSWER_BYTES)] } })).toMatch(/exceed/);
  });
  it("a receipt matches as data, not as text", () => {
    expect(
      sameAnswers('{"answers":{"colour":{"answers":["Red"]}}}', '{ "answers": { "colour": { "answers": ["Red"] } } }'),
    ).toBe(true);
    expect(
      sameAnswers('{"answers":{"colour":{"answers":["Red"]}}}', '{"answers":{"colour":{"answers":["Blue"]}}}'),
    ).toBe(false);
    expect(sameAnswers("request_user_input is unavailable in Default mode", "{}")).toBe(false);
  });
});
