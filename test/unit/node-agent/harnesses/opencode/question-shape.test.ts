/**
 * The shape of an OpenCode question and its reply (issue 13 part 4, rules 35 and 39): a pending
 * request of OpenCode's `question` tool becomes questions q1..qN bound to seat, occupant,
 * session (thread), message (turn), tool call and request id; a free answer is allowed unless
 * OpenCode says `custom: false`; a multi-select says so; the lead's answers become OpenCode's
 * reply shape, one array per question in order. Only OpenCode seats with a server and session
 * are watched.
 */
import { describe, expect, it } from "vitest";
import { SeatKind } from "../../../../../shared/verdicts.js";
import type { SeatRecord } from "../../../../../node-agent/harnesses/adapter.js";
import {
  nativeOpenCodeAnswers,
  openCodeTarget,
  questionOf,
} from "../../../../../node-agent/harnesses/opencode/questions.js";

const seat: SeatRecord = {
  name: "oc",
  kind: SeatKind.OpenCode,
  title: "t",
  occupantId: "opencode:1:ses_a",
  createdAtMs: 0,
  pane: { host: "tmux", paneId: "%3", terminalId: "%3", sessionId: "s" },
  control: { baseUrl: "http://127.0.0.1:1", sessionId: "ses_a" },
};

describe("OpenCode question shape", () => {
  it("rule 35: a request is bound to seat, occupant, pane, session, message, call and request id", () => {
    const q = questionOf(seat, {
      id: "que_1",
      sessionID: "ses_a",
      tool: { messageID: "msg_1", callID: "toolu_1" },
      questions: [
        { question: "Which db?", header: "DB", options: [{ label: "A", description: "a" }] },
        { question: "Which tags?", header: "Tags", options: [], multiple: true, custom: false },
      ],
    });
    expect(q).toEqual({
      seat: "oc",
      occupantId: "opencode:1:ses_a",
      paneId: "%3",
      threadId: "ses_a",
      turnId: "msg_1",
      itemId: "toolu_1",
      requestId: "que_1",
      questions: [
        { id: "q1", header: "DB", question: "Which db?", isOther: true, options: [{ label: "A", description: "a" }] },
        { id: "q2", header: "Tags", question: "Which tags? (several may be chosen)", isOther: false, options: [] },
      ],
    });
    expect(nativeOpenCodeAnswers(q, { q2: { answers: ["x", "y"] }, q1: { answers: ["A"] } })).toEqual([
      ["A"],
      ["x", "y"],
    ]);
  });

  it("issue 13 part 4: only OpenCode seats with a server and session are watched", () => {
    expect(openCodeTarget(seat)).toEqual({
      baseUrl: "http://127.0.0.1:1",
      sessionId: "ses_a",
      passwordFile: undefined,
    });
    // Records as the seat book reads them back from disk, where nothing types them.
    const fromDisk = (row: object) => JSON.parse(JSON.stringify(row)) as SeatRecord;
    expect(openCodeTarget(fromDisk({ ...seat, control: { baseUrl: "http://127.0.0.1:1" } }))).toBeUndefined();
    expect(openCodeTarget(fromDisk({ ...seat, kind: SeatKind.Codex }))).toBeUndefined();
  });
});
