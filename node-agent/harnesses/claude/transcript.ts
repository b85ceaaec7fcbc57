/**
 * Reading a Claude Code session transcript (JSONL) for delivery proof: the user line whose
 * origin is our channel and whose content carries our id, or (the inbox socket, 2.1.224+) the
 * peer-origin user line that Claude verified came from this very process (`verifiedPeerPid`)
 * and whose content carries our id. A missing, unreadable, shrunk
 * (rotated) or damaged transcript is a gap in the read, never a verdict; a trailing line
 * still being written is simply not there yet.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { contentFingerprint } from "../../../shared/fingerprint.js";
import type { CannotWork, SessionEntry } from "../adapter.js";

export interface TranscriptRead {
  ok: boolean;
  detail: string;
  /** Our channel deliveries, by delivery id. */
  entries: SessionEntry[];
  /** The session has taken at least one event from a channel (it is a proven receiver). */
  hasChannelEvent: boolean;
  /** A best-effort turn state from the last entries; the pane host's view and the turn hooks win. */
  turn: "working" | "idle" | "unknown";
  /** When the newest prompt (typed or a channel event) was written; 0 when none. */
  lastPromptAtMs: number;
  /** When the newest "[Request interrupted by user…]" line was written; 0 when none. */
  interruptedAtMs: number;
  /** False when part of the file could not be parsed or it shrank since the last read. */
  complete: boolean;
  /** Our channel events waiting in Claude's input queue: enqueued (a `queue-operation` naming our id) and not yet taken. */
  queuedIds: ReadonlySet<string>;
  /** Input Claude has queued and not yet taken (enqueues less dequeues), counted from the read's `queueSinceMs`. */
  queueDepth: number;
  /** Claude's own error answer (`isApiErrorMessage`), while it is the newest line of the conversation (issue 35). */
  apiError?: { error: string; text: string } | undefined;
}

interface Line {
  type?: string;
  uuid?: string;
  timestamp?: string;
  isMeta?: boolean;
  origin?: { kind?: string; server?: string; verifiedPeerPid?: number };
  message?: { role?: string; content?: unknown; stop_reason?: string | null };
  /** On a `queue-operation` line: enqueue, dequeue, remove, popOne or popAll. */
  operation?: string;
  content?: unknown;
  /** On Claude's synthetic assistant line for a turn it could not run (2.1.332: "authentication_failed"). */
  isApiErrorMessage?: boolean;
  error?: string;
}

/** Claude's own answer that it cannot run a turn (issue 35): its newest line is an authentication error. */
export function claudeCannotWork(t: TranscriptRead): CannotWork | undefined {
  if (!t.ok || t.apiError?.error !== "authentication_failed") return undefined;
  return {
    reason: "no_auth",
    detail: `Claude's transcript: its last answer is "${t.apiError.text}" (authentication_failed)`,
  };
}

const ID_ATTR = /clankie_id="([0-9a-fA-F-]{36})"/;

/** The tag an inbox message is wrapped in (inbox-client.ts), like a channel event's <channel …>. */
export const CLANKIE_MESSAGE_TAG = "clankie-message";
const OURS_AT_START = /^\s*<(channel|clankie-message)\b/;

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((c) => (typeof c === "object" && c && "text" in c ? String((c as { text: unknown }).text) : ""))
    .join("");
}

function isToolResult(content: unknown): boolean {
  return Array.isArray(content) && content.some((c) => (c as { type?: string }).type === "tool_result");
}

/** The text inside <channel …>…</channel> (or our inbox tag), so the fingerprint is of what we sent. */
function channelBody(text: string): string {
  const m = /<(channel|clankie-message)\b[^>]*>([\s\S]*?)<\/\1>/.exec(text);
  return (m ? m[2]! : text).trim();
}

/** A line that reached the session as a prompt from outside: our channel, or a peer message (the inbox). */
function isPushed(l: Line): boolean {
  return l.origin?.kind === "channel" || l.origin?.kind === "peer";
}

/** What one transcript has shown so far, folded line by line so each read parses only what was appended. */
interface Folded {
  ino: number;
  /** Bytes consumed: up to and including the last complete line. */
  offset: number;
  size: number;
  entries: SessionEntry[];
  ids: Set<string>;
  hasChannelEvent: boolean;
  damaged: number;
  /** The newest line that decides the turn state (an assistant line or a prompt). */
  turnLine: Line | undefined;
  lastPromptAtMs: number;
  interruptedAtMs: number;
  /** Each queued input (when it was enqueued, and our id if it is our channel event), oldest first: Claude's queue is first in, first out. */
  pending: { atMs: number; id: string | undefined }[];
  /** Queue operations older than this belong to an earlier Claude process on the same transcript (a resume). */
  queueSinceMs: number;
  apiError: { error: string; text: string } | undefined;
}

/** Bounds on the queue bookkeeping, so a session that never drains its queue cannot grow it without end. */
const MAX_PENDING = 1000;

const fresh = (ino: number): Folded => ({
  ino,
  offset: 0,
  size: 0,
  entries: [],
  ids: new Set(),
  hasChannelEvent: false,
  damaged: 0,
  turnLine: undefined,
  lastPromptAtMs: 0,
  interruptedAtMs: 0,
  pending: [],
  queueSinceMs: 0,
  apiError: undefined,
});

/** The largest slice read at once; a longer backlog is read over several calls' worth of slices. */
const READ_SLICE_BYTES = 8 * 1024 * 1024;

/**
 * Reads transcripts incrementally: Claude only appends, so each read parses the bytes added
 * since the last one (a 10 MB session is not re-read on every 200 ms poll). A file that
 * shrank or was replaced is read again from the start, and that read is marked incomplete.
 */
export class TranscriptReader {
  private readonly folded = new Map<string, Folded>();

  /** PEER_PID: the process whose inbox writes count as ours (this agent); Claude records it from the socket's peer credentials. */
  constructor(private readonly peerPid: number = process.pid) {}

  /**
   * QUEUE_SINCE_MS is when the live Claude process began this session (its SessionStart
   * report): queue operations before it are an earlier process's, whose queue died with it.
   */
  read(path: string, queueSinceMs = 0): TranscriptRead {
    const empty = (detail: string): TranscriptRead => ({
      ok: false,
      detail,
      entries: [],
      hasChannelEvent: false,
      turn: "unknown",
      lastPromptAtMs: 0,
      interruptedAtMs: 0,
      complete: false,
      queuedIds: new Set(),
      queueDepth: 0,
    });
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (e) {
      return empty(`transcript unreadable: ${(e as Error).message}`);
    }
    let rotated = false;
    let f: Folded;
    let tail = "";
    try {
      const st = fstatSync(fd);
      const known = this.folded.get(path);
      rotated = known !== undefined && (st.size < known.size || st.ino !== known.ino);
      f = known && !rotated ? known : fresh(st.ino);
      this.folded.set(path, f);
      if (queueSinceMs > f.queueSinceMs) {
        f.queueSinceMs = queueSinceMs;
        f.pending = f.pending.filter((p) => p.atMs >= queueSinceMs);
      }
      f.size = st.size;
      let slice = READ_SLICE_BYTES;
      while (f.offset < st.size) {
        const want = Math.min(st.size - f.offset, slice);
        const buf = Buffer.allocUnsafe(want);
        const got = readSync(fd, buf, 0, want, f.offset);
        if (got <= 0) break;
        const chunk = buf.subarray(0, got);
        // Only whole lines are consumed; a newline byte never sits inside a UTF-8 sequence.
        const lastNewline = chunk.lastIndexOf(0x0a);
        if (lastNewline < 0) {
          // No whole line here: the end of the file (a line still being written), or one line
          // longer than the slice, read whole on the next round.
          if (f.offset + got >= st.size) {
            tail = chunk.toString("utf8");
            break;
          }
          slice = st.size - f.offset;
          continue;
        }
        for (const line of chunk.subarray(0, lastNewline).toString("utf8").split("\n")) this.fold(f, line);
        f.offset += lastNewline + 1;
        tail = lastNewline + 1 < got ? chunk.subarray(lastNewline + 1).toString("utf8") : "";
      }
    } catch (e) {
      return empty(`transcript unreadable: ${(e as Error).message}`);
    } finally {
      closeSync(fd);
    }
    return {
      ok: true,
      detail: rotated
        ? "the transcript shrank since the last read (rotated or truncated)"
        : f.damaged
          ? `${f.damaged} damaged line(s)`
          : tail.trim()
            ? "last line still being written"
            : "read",
      entries: [...f.entries],
      hasChannelEvent: f.hasChannelEvent,
      turn: turnOf(f.turnLine),
      lastPromptAtMs: f.lastPromptAtMs,
      interruptedAtMs: f.interruptedAtMs,
      complete: !rotated && f.damaged === 0,
      queuedIds: new Set(f.pending.flatMap((p) => (p.id ? [p.id] : []))),
      queueDepth: f.pending.length,
      apiError: f.apiError,
    };
  }

  private fold(f: Folded, raw: string): void {
    if (!raw.trim()) return;
    let l: Line;
    try {
      l = JSON.parse(raw) as Line;
    } catch {
      f.damaged++;
      return;
    }
    if (l.type === "queue-operation") return this.foldQueue(f, l);
    if (decidesTurn(l)) f.turnLine = l;
    // Any later line of the conversation (a prompt, /login, an answer) supersedes an error answer.
    if (l.type === "assistant" || l.type === "user")
      f.apiError = l.isApiErrorMessage ? { error: l.error ?? "", text: textOf(l.message?.content) } : undefined;
    if (l.type === "user" && l.timestamp && !isToolResult(l.message?.content)) {
      const at = Date.parse(l.timestamp);
      const text = textOf(l.message?.content);
      if (Number.isFinite(at) && INTERRUPTED.test(text)) f.interruptedAtMs = Math.max(f.interruptedAtMs, at);
      else if (Number.isFinite(at) && text && (!l.isMeta || isPushed(l)))
        f.lastPromptAtMs = Math.max(f.lastPromptAtMs, at);
    }
    if (l.type !== "user" || !isPushed(l)) return;
    // A peer line is ours only when Claude verified it came from this process: any session may write our tag.
    if (l.origin?.kind === "peer" && l.origin.verifiedPeerPid !== this.peerPid) return;
    if (l.origin?.kind === "channel") f.hasChannelEvent = true;
    const text = textOf(l.message?.content);
    const id = ID_ATTR.exec(text)?.[1]?.toLowerCase();
    if (!id || f.ids.has(id)) return;
    f.ids.add(id);
    // Taken for certain, whether or not a dequeue was written for it: it waits no longer.
    const waiting = f.pending.findIndex((p) => p.id === id);
    if (waiting >= 0) f.pending.splice(waiting, 1);
    f.entries.push({
      deliveryId: id,
      nativeReceiptId: l.uuid ?? "",
      contentFingerprint: contentFingerprint(channelBody(text)),
      atMs: l.timestamp ? Date.parse(l.timestamp) : 0,
    });
  }

  /**
   * Claude's input queue as its transcript records it (research/harnesses.md, Claude (c)): a
   * channel event pushed while a turn runs, or between turns, is enqueued and taken later.
   * Claude writes the queue's operations, not which item a dequeue took; the queue is first
   * in, first out, so the oldest goes.
   */
  private foldQueue(f: Folded, l: Line): void {
    const at = l.timestamp ? Date.parse(l.timestamp) : Number.NaN;
    if (!Number.isFinite(at) || at < f.queueSinceMs) return;
    switch (l.operation) {
      case "enqueue": {
        const text = typeof l.content === "string" ? l.content : "";
        const id = OURS_AT_START.test(text) ? ID_ATTR.exec(text)?.[1]?.toLowerCase() : undefined;
        f.pending.push({ atMs: at, id });
        if (f.pending.length > MAX_PENDING) f.pending.shift();
        return;
      }
      case "dequeue":
        // Claude took a queued input to run it: a turn starts now, though its prompt line may
        // be written a moment later (observed: 100+ ms between the two under load).
        f.pending.shift();
        f.lastPromptAtMs = Math.max(f.lastPromptAtMs, at);
        f.turnLine = DEQUEUED;
        return;
      case "remove":
      case "popOne":
        f.pending.shift();
        return;
      case "popAll":
        f.pending = [];
        return;
    }
  }
}

/** An assistant line, or a prompt (typed, a channel event or a peer message, which start a turn like one). */
function decidesTurn(l: Line): boolean {
  return l.type === "assistant" || (l.type === "user" && (!l.isMeta || isPushed(l)));
}

function turnOf(l: Line | undefined): "working" | "idle" | "unknown" {
  if (!l) return "unknown";
  if (l.type === "assistant") return l.message?.stop_reason === "end_turn" ? "idle" : "working";
  return isToolResult(l.message?.content) || textOf(l.message?.content) ? "working" : "unknown";
}

const INTERRUPTED = /^\[Request interrupted by user/;

/** Stands for the prompt line of an input Claude just dequeued, until that line is written. */
const DEQUEUED: Line = { type: "user", message: { role: "user", content: "(a queued input, dequeued)" } };
