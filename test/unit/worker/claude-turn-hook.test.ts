/**
 * Claude's UserPromptSubmit and Stop hooks file the turn boundary under the Claude pid, and
 * only for a Claude ancestor and a safe session id; the adapter reads busy or idle from them,
 * corrected by the transcript (a prompt after Stop is a new turn; an Esc interruption ends a
 * turn without a Stop).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { decideTurn, runTurnHook } from "../../../worker/claude-turn-hook.js";
import { readTurnReport, writeTurnReport } from "../../../node-agent/harnesses/claude/session-report.js";
import { turnFromHooks } from "../../../node-agent/harnesses/claude/adapter.js";
import type { TranscriptRead } from "../../../node-agent/harnesses/claude/transcript.js";
import { SeatStatus } from "../../../shared/verdicts.js";

const SESSION = "56323ed8-9fc4-4d3c-a4fd-db5a9eddca44";
const claudeAncestors = [
  { pid: 700, argv: ["/bin/sh", "-c", "clankie worker turn-hook"] },
  { pid: 650, argv: ["/usr/bin/node", "/opt/claude/cli.js"] },
  { pid: 600, argv: ["/root/.harnesses/claude/node_modules/.bin/claude", "--settings", "s.json"] },
];
const dir = mkdtempSync(join(tmpdir(), "clankie-turn-hook-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("claude-turn-hook.decideTurn", () => {
  it("UserPromptSubmit is a running turn, Stop and StopFailure an idle one, filed under the Claude pid", () => {
    expect(
      decideTurn({ hook_event_name: "UserPromptSubmit", session_id: SESSION, prompt_id: "p1" }, claudeAncestors, 1000),
    ).toEqual({
      sessionId: SESSION,
      promptId: "p1",
      state: "working",
      event: "UserPromptSubmit",
      claudePid: 600,
      atMs: 1000,
    });
    expect(
      decideTurn({ hook_event_name: "Stop", session_id: SESSION, prompt_id: "p1" }, claudeAncestors, 2000),
    ).toMatchObject({ state: "idle", claudePid: 600 });
    expect(decideTurn({ hook_event_name: "StopFailure", session_id: SESSION }, claudeAncestors, 2000)).toMatchObject({
      state: "idle",
      promptId: "",
    });
  });

  it("files nothing for other events, unsafe session ids, or a hook not run under Claude", () => {
    expect(decideTurn({ hook_event_name: "PreToolUse", session_id: SESSION }, claudeAncestors, 1)).toBeUndefined();
    expect(decideTurn({ hook_event_name: "Stop", session_id: "../../etc/passwd" }, claudeAncestors, 1)).toBeUndefined();
    expect(
      decideTurn({ hook_event_name: "Stop", session_id: SESSION }, [{ pid: 5, argv: ["/bin/bash"] }], 1),
    ).toBeUndefined();
    expect(decideTurn({ hook_event_name: "Stop", session_id: SESSION }, undefined, 1)).toBeUndefined();
  });

  it("garbage on stdin or no report dir files nothing and never throws", () => {
    expect(() => runTurnHook(dir, "{not json")).not.toThrow();
    expect(() =>
      runTurnHook(undefined, JSON.stringify({ hook_event_name: "Stop", session_id: SESSION })),
    ).not.toThrow();
  });

  it("a report round-trips; a damaged one reads as none", () => {
    writeTurnReport(dir, { sessionId: SESSION, promptId: "p", state: "idle", event: "Stop", claudePid: 42, atMs: 5 });
    expect(readTurnReport(dir, 42)).toMatchObject({ state: "idle", atMs: 5 });
    writeTurnReport(dir, {
      sessionId: SESSION,
      promptId: "p",
      state: "sleeping" as "idle",
      event: "Stop",
      claudePid: 43,
      atMs: 5,
    });
    expect(readTurnReport(dir, 43)).toBeUndefined();
    expect(readTurnReport(dir, 44)).toBeUndefined();
  });
});

describe("claude.turnFromHooks", () => {
  const t = (lastPromptAtMs: number, interruptedAtMs = 0) => ({ lastPromptAtMs, interruptedAtMs }) as TranscriptRead;
  const report = (state: "working" | "idle", atMs: number) => ({
    sessionId: SESSION,
    promptId: "p",
    state,
    event: state === "idle" ? "Stop" : "UserPromptSubmit",
    claudePid: 1,
    atMs,
  });

  it("Stop means idle even when the transcript never got the reply (observed on the real binary)", () => {
    expect(turnFromHooks(report("idle", 2000), SESSION, t(1500))).toBe(SeatStatus.Idle);
  });
  it("a prompt written after the last Stop is a new turn", () => {
    expect(turnFromHooks(report("idle", 2000), SESSION, t(2100))).toBe(SeatStatus.Working);
  });
  it("a running turn stays working until an interruption is written after it (Esc fires no Stop)", () => {
    expect(turnFromHooks(report("working", 2000), SESSION, t(2000))).toBe(SeatStatus.Working);
    expect(turnFromHooks(report("working", 2000), SESSION, t(2000, 2500))).toBe(SeatStatus.Idle);
  });
  it("no report, or one from another session, leaves the transcript in charge", () => {
    expect(turnFromHooks(undefined, SESSION, t(1))).toBeUndefined();
    expect(turnFromHooks(report("idle", 1), "11111111-2222-3333-4444-555555555555", t(1))).toBeUndefined();
  });
});
