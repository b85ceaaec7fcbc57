/**
 * Rule 39 for Claude Code, which names no turns: native idle releases dispatch only after the
 * exact active turn is observed terminal. What Claude does give is its transcript: each prompt's
 * time (a typed prompt, a channel or inbox event, a dequeued input), the assistant's `end_turn`,
 * the interrupt line, and its input queue (`queue-operation` lines naming our id). So a write
 * records, before it leaves, whether a turn was running and when that turn's prompt was written;
 * that turn reads terminal only once the transcript shows an `end_turn` (or an interrupt) at or
 * after that prompt, and never while our own event still waits in Claude's queue. Kept in
 * memory (bounded): after an agent restart the turn is unknown, and unknown never releases.
 */
import type { WriteTurnState } from "../adapter.js";
import type { TranscriptRead } from "./transcript.js";

const MAX_RECORDS = 1000;

export class ClaudeWriteTurns {
  private readonly byDelivery = new Map<string, { sessionId: string; promptAtMs: number; working: boolean }>();

  /** Before the write leaves: the session, whether a turn runs, and its prompt's time. */
  record(deliveryId: string, sessionId: string, promptAtMs: number, working: boolean): void {
    if (this.byDelivery.size >= MAX_RECORDS) this.byDelivery.delete(this.byDelivery.keys().next().value!);
    this.byDelivery.set(deliveryId.toLowerCase(), { sessionId, promptAtMs, working });
  }

  /** The recorded turn's state as the transcript of SESSION_ID shows it now. */
  observe(deliveryId: string, sessionId: string, t: TranscriptRead): WriteTurnState {
    const id = deliveryId.toLowerCase();
    if (!t.ok) return "unknown";
    // Our event waits in Claude's input queue: the turn it waits behind has not ended.
    if (t.queuedIds.has(id)) return "active";
    const rec = this.byDelivery.get(id);
    if (!rec || rec.sessionId !== sessionId) return "unknown";
    // No turn ran at the write: none can still hold the message back.
    if (!rec.working) return "terminal";
    if (t.interruptedAtMs >= rec.promptAtMs && t.interruptedAtMs > 0) return "terminal";
    return t.turn === "idle" && t.lastPromptAtMs >= rec.promptAtMs ? "terminal" : "active";
  }
}
