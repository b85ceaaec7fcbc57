/**
 * Reading a Claude Code session transcript (JSONL) for delivery proof: the user line whose
 * origin is our channel and whose content carries our id. A missing, unreadable, shrunk
 * (rotated) or damaged transcript is a gap in the read, never a verdict; a trailing line
 * still being written is simply not there yet.
 */
import { readFileSync, statSync } from "node:fs";
import { contentFingerprint } from "../../shared/fingerprint.js";
import type { SessionEntry } from "./adapter.js";

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
}

interface Line {
  type?: string;
  uuid?: string;
  timestamp?: string;
  isMeta?: boolean;
  origin?: { kind?: string; server?: string };
  message?: { role?: string; content?: unknown; stop_reason?: string | null };
}

const ID_ATTR = /clankie_id="([0-9a-fA-F-]{36})"/;

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((c) => (typeof c === "object" && c && "text" in c ? String((c as { text: unknown }).text) : "")).join("");
}

function isToolResult(content: unknown): boolean {
  return Array.isArray(content) && content.some((c) => (c as { type?: string }).type === "tool_result");
}

/** The text inside <channel …>…</channel>, so the fingerprint is of what we sent. */
function channelBody(text: string): string {
  const m = /<channel\b[^>]*>([\s\S]*?)<\/channel>/.exec(text);
  return (m ? m[1]! : text).trim();
}

export class TranscriptReader {
  private readonly sizes = new Map<string, number>();

  read(path: string): TranscriptRead {
    const empty = (detail: string): TranscriptRead => ({ ok: false, detail, entries: [], hasChannelEvent: false, turn: "unknown", lastPromptAtMs: 0, interruptedAtMs: 0, complete: false });
    let raw: string;
    let size: number;
    try {
      size = statSync(path).size;
      raw = readFileSync(path, "utf8");
    } catch (e) {
      return empty(`transcript unreadable: ${(e as Error).message}`);
    }
    const before = this.sizes.get(path) ?? 0;
    this.sizes.set(path, size);
    const rotated = size < before;
    const parts = raw.split("\n");
    // The last part has no newline yet: a line still being written, or a truncated one.
    const tail = parts.pop() ?? "";
    let damaged = 0;
    const lines: Line[] = [];
    for (const p of parts) {
      if (!p.trim()) continue;
      try {
        lines.push(JSON.parse(p) as Line);
      } catch {
        damaged++;
      }
    }
    const entries: SessionEntry[] = [];
    let hasChannelEvent = false;
    for (const l of lines) {
      if (l.type !== "user" || l.origin?.kind !== "channel") continue;
      hasChannelEvent = true;
      const text = textOf(l.message?.content);
      const id = ID_ATTR.exec(text)?.[1];
      if (!id || entries.some((e) => e.deliveryId === id)) continue;
      entries.push({ deliveryId: id.toLowerCase(), nativeReceiptId: l.uuid ?? "", contentFingerprint: contentFingerprint(channelBody(text)), atMs: l.timestamp ? Date.parse(l.timestamp) : 0 });
    }
    return {
      ok: true,
      detail: rotated ? "the transcript shrank since the last read (rotated or truncated)" : damaged ? `${damaged} damaged line(s)` : tail.trim() ? "last line still being written" : "read",
      entries,
      hasChannelEvent,
      turn: turnState(lines),
      ...promptTimes(lines),
      complete: !rotated && damaged === 0,
    };
  }
}

function turnState(lines: Line[]): "working" | "idle" | "unknown" {
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i]!;
    if (l.type === "assistant") return l.message?.stop_reason === "end_turn" ? "idle" : "working";
    // A channel event is written as a meta user line, and it starts a turn like a typed prompt.
    if (l.type === "user" && (!l.isMeta || l.origin?.kind === "channel")) return isToolResult(l.message?.content) || textOf(l.message?.content) ? "working" : "unknown";
  }
  return "unknown";
}

const INTERRUPTED = /^\[Request interrupted by user/;

/** The newest prompt and the newest interruption, by the transcript's own timestamps. */
function promptTimes(lines: Line[]): { lastPromptAtMs: number; interruptedAtMs: number } {
  let lastPromptAtMs = 0;
  let interruptedAtMs = 0;
  for (const l of lines) {
    if (l.type !== "user" || !l.timestamp || isToolResult(l.message?.content)) continue;
    const at = Date.parse(l.timestamp);
    if (!Number.isFinite(at)) continue;
    const text = textOf(l.message?.content);
    if (INTERRUPTED.test(text)) interruptedAtMs = Math.max(interruptedAtMs, at);
    else if (text && (!l.isMeta || l.origin?.kind === "channel")) lastPromptAtMs = Math.max(lastPromptAtMs, at);
  }
  return { lastPromptAtMs, interruptedAtMs };
}
