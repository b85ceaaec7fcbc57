/** Reading Claude transcripts for proof: our id only from channel lines; damage and rotation are gaps, never verdicts. */
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { claudeCannotWork, TranscriptReader } from "../../../../../node-agent/harnesses/claude/transcript.js";

const dir = mkdtempSync(join(tmpdir(), "clankie-transcript-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ID = "7335fe0e-a46e-4d52-994d-71de1cac2a35";
const channelLine = (id: string, text = "hello") =>
  JSON.stringify({
    type: "user",
    isMeta: true,
    uuid: "u-1",
    timestamp: "2026-11-30T10:00:00.000Z",
    origin: { kind: "channel", server: "clankie-seat" },
    message: { role: "user", content: `<channel source="clankie-seat" clankie_id="${id}">\n${text}\n</channel>` },
  }) + "\n";
const endTurn =
  JSON.stringify({
    type: "assistant",
    message: { role: "assistant", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn" },
  }) + "\n";

describe("claude-transcript.TranscriptReader", () => {
  it("finds our delivery only on a channel-origin user line carrying our id", () => {
    const p = join(dir, "a.jsonl");
    const typed =
      JSON.stringify({ type: "user", message: { role: "user", content: `clankie_id="${ID}" typed by hand` } }) + "\n";
    writeFileSync(p, typed + channelLine(ID) + endTurn);
    const r = new TranscriptReader().read(p);
    expect(r.entries.map((e) => e.deliveryId)).toEqual([ID]);
    expect(r.entries[0]!.nativeReceiptId).toBe("u-1");
    expect(r.hasChannelEvent).toBe(true);
    expect(r.turn).toBe("idle");
    expect(r.complete).toBe(true);
  });

  it("a channel line still being written is not there yet, and the read stays complete", () => {
    const p = join(dir, "b.jsonl");
    writeFileSync(p, channelLine(ID).slice(0, 60));
    const r = new TranscriptReader().read(p);
    expect(r.ok).toBe(true);
    expect(r.entries).toEqual([]);
    appendFileSync(p, channelLine(ID).slice(60));
    expect(new TranscriptReader().read(p).entries.map((e) => e.deliveryId)).toEqual([ID]);
  });

  it("a damaged line marks the read incomplete instead of throwing", () => {
    const p = join(dir, "c.jsonl");
    writeFileSync(p, '{"type":"user", broken\n' + channelLine(ID));
    const r = new TranscriptReader().read(p);
    expect(r.complete).toBe(false);
    expect(r.entries).toHaveLength(1);
  });

  it("a transcript that shrank (rotated or truncated) is a gap: incomplete, never proof of absence", () => {
    const p = join(dir, "d.jsonl");
    const reader = new TranscriptReader();
    writeFileSync(p, channelLine(ID) + endTurn);
    expect(reader.read(p).complete).toBe(true);
    writeFileSync(p, endTurn);
    const r = reader.read(p);
    expect(r.complete).toBe(false);
    expect(r.detail).toContain("shrank");
  });

  it("a missing transcript is an unreadable poll, not a verdict", () => {
    const r = new TranscriptReader().read(join(dir, "missing.jsonl"));
    expect(r.ok).toBe(false);
    expect(r.complete).toBe(false);
  });

  it("a channel event with no assistant reply after it reads as a turn in progress", () => {
    const p = join(dir, "e.jsonl");
    writeFileSync(p, endTurn + channelLine(ID));
    expect(new TranscriptReader().read(p).turn).toBe("working");
  });

  it("records when the newest prompt and the newest Esc interruption were written, ignoring tool results and other meta lines", () => {
    const p = join(dir, "times.jsonl");
    const line = (o: object) => JSON.stringify(o) + "\n";
    writeFileSync(
      p,
      channelLine(ID) +
        line({
          type: "user",
          timestamp: "2026-11-30T10:00:05.000Z",
          message: { role: "user", content: "typed prompt" },
        }) +
        line({
          type: "user",
          timestamp: "2026-11-30T10:00:06.000Z",
          message: { role: "user", content: [{ type: "tool_result", content: "x" }] },
        }) +
        line({
          type: "user",
          isMeta: true,
          timestamp: "2026-11-30T10:00:07.000Z",
          message: { role: "user", content: "caveat" },
        }) +
        line({
          type: "user",
          timestamp: "2026-11-30T10:00:08.000Z",
          message: { role: "user", content: [{ type: "text", text: "[Request interrupted by user]" }] },
        }),
    );
    const r = new TranscriptReader().read(p);
    expect(r.lastPromptAtMs).toBe(Date.parse("2026-11-30T10:00:05.000Z"));
    expect(r.interruptedAtMs).toBe(Date.parse("2026-11-30T10:00:08.000Z"));
  });

  it("reads incrementally: appended lines, a line finished after a read, and a file replaced by a longer one are all seen", () => {
    const p = join(dir, "incremental.jsonl");
    const reader = new TranscriptReader();
    const A = "11111111-2222-4333-8444-555555555555";
    const B = "21111111-2222-4333-8444-555555555555";
    const C = "31111111-2222-4333-8444-555555555555";
    writeFileSync(p, channelLine(ID));
    expect(reader.read(p).entries.map((e) => e.deliveryId)).toEqual([ID]);
    const half = channelLine(A);
    appendFileSync(p, half.slice(0, 40));
    expect(reader.read(p)).toMatchObject({ detail: "last line still being written", complete: true });
    appendFileSync(p, half.slice(40) + endTurn);
    const r = reader.read(p);
    expect(r.entries.map((e) => e.deliveryId)).toEqual([ID, A]);
    expect(r.turn).toBe("idle");
    // Replaced (a new file, not an append) and already longer than before: read again from the start.
    const replacement = join(dir, "incremental.next");
    writeFileSync(replacement, channelLine(B) + channelLine(C) + channelLine(C) + endTurn);
    renameSync(replacement, p);
    const again = reader.read(p);
    expect(again.entries.map((e) => e.deliveryId)).toEqual([B, C]);
    expect(again.complete).toBe(false);
    expect(reader.read(p).complete).toBe(true);
  });

  // The shape Claude Code 2.1 writes (research/harnesses.md, Claude (c)): enqueue carries the text, the others none.
  const queueOp = (operation: string, at: string, content?: string) =>
    JSON.stringify({
      type: "queue-operation",
      operation,
      timestamp: at,
      sessionId: "s",
      ...(content !== undefined && { content }),
    }) + "\n";
  const channelText = (id: string) =>
    `<channel source="clankie-seat" conversation="lead" clankie_id="${id}">\nhi\n</channel>`;
  const OTHER = "0b6f3c1e-0000-4000-8000-000000000002";

  it("Claude's input queue: our id enqueued is queued, not delivered, until its prompt line appears; the depth counts what is not yet taken", () => {
    const p = join(dir, "queue.jsonl");
    writeFileSync(
      p,
      queueOp("enqueue", "2026-11-30T10:00:01.000Z", channelText(ID)) +
        queueOp("enqueue", "2026-11-30T10:00:02.000Z", channelText(OTHER)),
    );
    const reader = new TranscriptReader();
    let r = reader.read(p);
    expect([...r.queuedIds]).toEqual([ID, OTHER]);
    expect(r.entries).toEqual([]);
    expect(r.queueDepth).toBe(2);
    // A dequeue takes the oldest: ours is no longer waiting, though its prompt line is not written yet.
    appendFileSync(p, queueOp("dequeue", "2026-11-30T10:00:03.000Z"));
    r = reader.read(p);
    expect(r.entries).toEqual([]);
    expect([...r.queuedIds]).toEqual([OTHER]);
    expect(r.queueDepth).toBe(1);
    appendFileSync(p, channelLine(ID));
    r = reader.read(p);
    expect(r.entries.map((e) => e.deliveryId)).toEqual([ID]);
    expect(r.queueDepth).toBe(1);
    // A prompt line for an event still queued (taken with no dequeue written) takes it off the queue.
    appendFileSync(p, channelLine(OTHER));
    expect(reader.read(p).queueDepth).toBe(0);
    appendFileSync(
      p,
      queueOp("enqueue", "2026-11-30T10:00:04.000Z", "typed while busy") +
        queueOp("popAll", "2026-11-30T10:00:05.000Z", "typed while busy"),
    );
    expect(reader.read(p).queueDepth).toBe(0);
  });

  it("a typed prompt naming our id in the queue is not our channel event, and a dequeue on an empty queue stays at zero", () => {
    const p = join(dir, "queue-typed.jsonl");
    writeFileSync(
      p,
      queueOp("enqueue", "2026-11-30T10:00:01.000Z", `please look at clankie_id="${ID}"`) +
        queueOp("dequeue", "2026-11-30T10:00:02.000Z") +
        queueOp("remove", "2026-11-30T10:00:03.000Z"),
    );
    const r = new TranscriptReader().read(p);
    expect(r.queuedIds.size).toBe(0);
    expect(r.queueDepth).toBe(0);
  });

  it("queue operations before the live process's session start are an earlier process's: they count for nothing", () => {
    const p = join(dir, "queue-resume.jsonl");
    writeFileSync(p, queueOp("enqueue", "2026-11-30T10:00:01.000Z", channelText(OTHER)));
    const reader = new TranscriptReader();
    expect(reader.read(p).queueDepth).toBe(1);
    // The process that queued it died; a resumed one started at 10:05.
    const resumedAt = Date.parse("2026-11-30T10:05:00.000Z");
    expect(reader.read(p, resumedAt).queueDepth).toBe(0);
    appendFileSync(p, queueOp("enqueue", "2026-11-30T10:05:01.000Z", channelText(ID)));
    const r = reader.read(p, resumedAt);
    expect(r.queueDepth).toBe(1);
    expect(r.queuedIds.has(ID)).toBe(true);
  });

  it("a dequeue starts a turn before its prompt line is written: the newest prompt time moves to it and the transcript reads working", () => {
    const p = join(dir, "queue-dequeue.jsonl");
    writeFileSync(
      p,
      channelLine(OTHER) +
        endTurn +
        queueOp("enqueue", "2026-11-30T10:00:05.000Z", channelText(ID)) +
        queueOp("dequeue", "2026-11-30T10:00:05.030Z"),
    );
    const r = new TranscriptReader().read(p);
    expect(r.turn).toBe("working");
    expect(r.lastPromptAtMs).toBe(Date.parse("2026-11-30T10:00:05.030Z"));
    expect(r.queueDepth).toBe(0);
  });

  it("issue 35 item 4: an inbox message is ours only on a peer line Claude verified came from our pid, carrying our id (shape as 2.1.332 writes it)", () => {
    const p = join(dir, "peer.jsonl");
    const body = `<clankie-message clankie_id="${ID}" conversation="c1">hello</clankie-message>`;
    const peer = (pid: number, uuid: string) =>
      JSON.stringify({
        type: "user",
        isMeta: true,
        uuid,
        timestamp: "2026-12-06T06:36:02.479Z",
        origin: { kind: "peer", from: "unknown", verifiedPeerPid: pid, verifiedPeerProcStart: "92490" },
        message: {
          role: "user",
          content: `Another Claude session sent a message:\n${body}\n\nThis came from another Claude session.`,
        },
      }) + "\n";
    const enqueue =
      JSON.stringify({
        type: "queue-operation",
        operation: "enqueue",
        timestamp: "2026-12-06T06:36:02.295Z",
        content: body,
      }) + "\n";
    // Another process wrote our tag with our id: not ours.
    writeFileSync(p, enqueue + peer(4242, "u-other"));
    const forged = new TranscriptReader(31456).read(p);
    expect(forged.entries).toEqual([]);
    expect(forged.queuedIds.has(ID)).toBe(true);
    appendFileSync(p, peer(31456, "u-ours") + endTurn);
    const r = new TranscriptReader(31456).read(p);
    expect(r.entries.map((e) => [e.deliveryId, e.nativeReceiptId])).toEqual([[ID, "u-ours"]]);
    expect(r.hasChannelEvent).toBe(false);
    expect(r.turn).toBe("idle");
  });
});

describe("claude-transcript.claudeCannotWork (issue 35 item 1)", () => {
  // The line Claude Code 2.1.332 wrote for a turn with no key and no login (observed on the pinned binary).
  const authError = (text = "Not logged in · Please run /login") =>
    JSON.stringify({
      type: "assistant",
      isApiErrorMessage: true,
      error: "authentication_failed",
      message: {
        role: "assistant",
        model: "<synthetic>",
        content: [{ type: "text", text }],
        stop_reason: "stop_sequence",
      },
    }) + "\n";

  it("Claude's own authentication_failed answer, while newest, says the seat cannot take a turn (no_auth)", () => {
    const p = join(dir, "auth.jsonl");
    writeFileSync(p, JSON.stringify({ type: "user", message: { role: "user", content: "hi" } }) + "\n" + authError());
    const reader = new TranscriptReader();
    expect(claudeCannotWork(reader.read(p))).toEqual({
      reason: "no_auth",
      detail: 'Claude\'s transcript: its last answer is "Not logged in · Please run /login" (authentication_failed)',
    });
    // Any later line of the conversation (the owner ran /login, a prompt, an answer) supersedes it.
    appendFileSync(p, JSON.stringify({ type: "user", message: { role: "user", content: "/login" } }) + "\n");
    expect(claudeCannotWork(reader.read(p))).toBeUndefined();
  });
});
