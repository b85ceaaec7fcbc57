/**
 * Rule 39 for Claude Code (issue 35 item 2): native idle releases dispatch only after the exact
 * active turn is observed terminal. Claude names no turns; its transcript shows each prompt, the
 * assistant's end_turn and its input queue. The seat reading idle (its hooks, between two
 * moments) is not enough: the turn that ran when our write left must show its end_turn, and our
 * own event must not still wait in Claude's queue. Each case feeds the unattended release's
 * decision (controller/delivery/idle-release.ts) what readSession now reports; before this fix
 * Claude reported no write turn, and idle alone released.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TranscriptReader } from "../../../../../node-agent/harnesses/claude/transcript.js";
import { ClaudeWriteTurns } from "../../../../../node-agent/harnesses/claude/write-turns.js";
import { idleReleases } from "../../../../../controller/delivery/idle-release.js";

const dir = mkdtempSync(join(tmpdir(), "clankie-claude-turns-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ID = "7335fe0e-a46e-4d52-994d-71de1cac2a35";
const line = (o: unknown) => `${JSON.stringify(o)}\n`;
const prompt = (at: string) =>
  line({ type: "user", uuid: "p", timestamp: at, message: { role: "user", content: "owner's prompt" } });
const working = line({ type: "assistant", message: { role: "assistant", content: [], stop_reason: "tool_use" } });
const endTurn = line({ type: "assistant", message: { role: "assistant", content: [], stop_reason: "end_turn" } });
const enqueue = (at: string) =>
  line({
    type: "queue-operation",
    operation: "enqueue",
    timestamp: at,
    content: `<channel source="clankie-seat" clankie_id="${ID}">\nhi\n</channel>`,
  });

/** What the release decides on an idle seat whose full read lacks the original. */
const releases = (writeTurn: ReturnType<ClaudeWriteTurns["observe"]>) =>
  idleReleases({ kind: "absent", status: "idle", writeTurn });

describe("ClaudeWriteTurns (rule 39)", () => {
  it("rule 39: the turn running at the write keeps the fence until the transcript shows its end_turn", () => {
    const p = join(dir, "running.jsonl");
    writeFileSync(p, prompt("2026-12-06T10:00:00.000Z") + working);
    const reader = new TranscriptReader();
    const turns = new ClaudeWriteTurns();
    turns.record(ID, "s1", reader.read(p).lastPromptAtMs, true);
    expect(releases(turns.observe(ID, "s1", reader.read(p)))).toBe(false);
    appendFileSync(p, endTurn);
    expect(turns.observe(ID, "s1", reader.read(p))).toBe("terminal");
    expect(releases(turns.observe(ID, "s1", reader.read(p)))).toBe(true);
  });

  it("rule 39: our event still in Claude's input queue is active, whatever the turn before it shows", () => {
    const p = join(dir, "queued.jsonl");
    writeFileSync(p, prompt("2026-12-06T10:00:00.000Z") + endTurn + enqueue("2026-12-06T10:00:01.000Z"));
    const reader = new TranscriptReader();
    const turns = new ClaudeWriteTurns();
    turns.record(ID, "s1", 0, false);
    expect(turns.observe(ID, "s1", reader.read(p))).toBe("active");
    expect(releases(turns.observe(ID, "s1", reader.read(p)))).toBe(false);
  });

  it("rule 39: a write this agent did not record (a restart), or another session's, is unknown and never releases", () => {
    const p = join(dir, "unknown.jsonl");
    writeFileSync(p, prompt("2026-12-06T10:00:00.000Z") + endTurn);
    const turns = new ClaudeWriteTurns();
    expect(turns.observe(ID, "s1", new TranscriptReader().read(p))).toBe("unknown");
    turns.record(ID, "s0", 0, false);
    expect(releases(turns.observe(ID, "s1", new TranscriptReader().read(p)))).toBe(false);
  });

  it("no turn ran at the write: nothing holds the message back, and idle releases", () => {
    const p = join(dir, "idle.jsonl");
    writeFileSync(p, prompt("2026-12-06T10:00:00.000Z") + endTurn);
    const turns = new ClaudeWriteTurns();
    turns.record(ID, "s1", 0, false);
    expect(releases(turns.observe(ID, "s1", new TranscriptReader().read(p)))).toBe(true);
  });
});
