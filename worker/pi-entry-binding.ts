/**
 * Inside the Clankie Pi extension: learns the exact session entry id Pi gave the user message
 * we delivered (rule 42's `nativeMessageId`). Pi 0.73 puts no id on the message itself; it
 * appends `{type:"message", id, message}` to its SessionManager right after the extensions'
 * `message_end` handlers return, holding the very message object the handlers saw. So the
 * entry is found by object identity, never by its text, and the binding is written into the
 * session as a `clankie-delivery` custom entry, so the session file itself says which entry
 * is which delivery (a lost answer is reconciled from the file, node-agent/harnesses/pi/session-file.ts).
 */
import { type PiSessionEntryLike, piUserText } from "../node-agent/harnesses/pi/session-entry.js";

export interface EntryBound {
  deliveryId: string;
  entryId: string;
}

const MAX_PENDING = 256;

interface Pending {
  deliveryId: string;
  text: string;
}

export class PiEntryBinder {
  private readonly pending: Pending[] = [];

  constructor(
    private readonly onBound: (b: EntryBound) => void,
    /** Waits one turn of the event loop (tests pass a synchronous one). */
    private readonly later: (f: () => void) => void = (f) => setTimeout(f, 10),
    private readonly tries = 200,
  ) {}

  /** A prompt we are about to hand Pi. Pi dequeues by text in order, so matching takes the oldest. */
  expect(deliveryId: string, text: string): void {
    this.pending.push({ deliveryId, text });
    // A prompt Pi dropped from its queue (the owner cleared it) never ends; keep the list bounded.
    if (this.pending.length > MAX_PENDING) this.pending.shift();
  }

  /** Pi refused or failed the prompt: nothing of ours will start. */
  forget(deliveryId: string): void {
    const at = this.pending.findIndex((p) => p.deliveryId === deliveryId);
    if (at >= 0) this.pending.splice(at, 1);
  }

  /** A `message_end` event: if it ends one of our user messages, find the entry Pi appends for that object. */
  onMessageEnd(message: unknown, entries: () => readonly PiSessionEntryLike[]): void {
    const text = piUserText(message);
    if (text === undefined) return;
    const at = this.pending.findIndex((p) => p.text === text);
    if (at < 0) return;
    const [ours] = this.pending.splice(at, 1);
    let left = this.tries;
    const look = () => {
      const list = entries();
      for (let i = list.length - 1; i >= 0; i--) {
        const e = list[i]!;
        // Identity, not content: the same text typed by anyone else is another object.
        if (e.type === "message" && e.message === message && typeof e.id === "string")
          return this.onBound({ deliveryId: ours!.deliveryId, entryId: e.id });
      }
      if (--left > 0) this.later(look);
    };
    this.later(look);
  }
}
