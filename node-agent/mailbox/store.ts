/**
 * A durable inbox on the agent's machine: one JSON file per message, named by its
 * delivery id, so a repeated delivery id is seen and never written twice. A worker reads
 * it with `clankie mailbox read` or the `read_mailbox` MCP tool; a cursor file remembers
 * what was read. Reconcile may fence an id that is absent and not being written: from then on
 * it is never written, so its absence is proven for good (ADR 0005, issue 32 item 6).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { basename, join, sep } from "node:path";
import { writeFileDurably, writeFileDurablyAsync } from "../../shared/durable-file.js";
import { contentFingerprint } from "../../shared/fingerprint.js";
import { canonicalUuid } from "../../shared/ids.js";
import { quoteInput } from "../../shared/public-text.js";

export interface MailboxEntry {
  schemaVersion: 1;
  deliveryId: string;
  seq: number;
  text: string;
  conversationId: string;
  inReplyTo?: string | undefined;
  receivedAtMs: number;
  contentFingerprint: string;
}

export interface AppendResult {
  entry: MailboxEntry;
  replayed: boolean;
}

/** What a fence found: the entry written, a write of it in progress, or neither (now fenced for good). */
export type MailboxFence =
  | { state: "found"; path: string; entry: MailboxEntry }
  | { state: "writing"; path: string }
  | { state: "fenced"; path: string; fencedAtMs: number };

/** An append of an id that reconcile fenced: nothing was written. */
export class MailboxFencedError extends Error {
  override readonly name = "MailboxFencedError";
}

export class MailboxStore {
  private readonly chains = new Map<string, Promise<unknown>>();
  // The last sequence number per mailbox, found once by scanning: appends are serialised per
  // mailbox in this one writer, so no counter file (and no second fsync) is needed.
  private readonly lastSeq = new Map<string, number>();
  // Each mailbox's directory path, joined once (the proof and the write ask for it per delivery).
  private readonly dirs = new Map<string, string>();
  // Delivery ids with an append queued or running (a count: a repeated id may queue twice).
  // Marked synchronously when append is called, so a fence never claims one of them absent.
  private readonly writing = new Map<string, number>();

  constructor(private readonly rootDir: string) {}

  dir(name: string): string {
    let d = this.dirs.get(name);
    if (d === undefined) {
      d = join(this.rootDir, name);
      // Bounded by the seats this agent names; a name that joins to another place is not cached.
      if (basename(d) === name) this.dirs.set(name, d);
    }
    return d;
  }

  exists(name: string): boolean {
    return existsSync(this.dir(name));
  }

  create(name: string): void {
    mkdirSync(this.dir(name), { recursive: true, mode: 0o700 });
  }

  /** Durably append a message; serialised per mailbox so sequence numbers stay dense. */
  append(
    name: string,
    msg: Omit<MailboxEntry, "schemaVersion" | "seq" | "receivedAtMs" | "contentFingerprint">,
  ): Promise<AppendResult> {
    // One file per id in its canonical case: "ABC….json" and "abc….json" are one delivery (issue 32 item 4).
    const id = canonicalUuid(msg.deliveryId) ?? msg.deliveryId;
    const run = async (): Promise<AppendResult> => {
      if (id !== canonicalUuid(id)) throw new Error(`delivery id is not a uuid: ${quoteInput(msg.deliveryId)}`);
      const path = this.entryPath(name, id);
      if (existsSync(path)) return { entry: parseMailboxEntry(readFileSync(path, "utf8"), path), replayed: true };
      if (existsSync(this.fencePath(name, id))) {
        throw new MailboxFencedError(`delivery ${id} was proven absent and fenced by reconciliation: never written`);
      }
      const seq = (this.lastSeq.get(name) ?? this.list(name).entries.reduce((max, e) => Math.max(max, e.seq), 0)) + 1;
      const entry: MailboxEntry = {
        schemaVersion: 1,
        deliveryId: id,
        seq,
        text: msg.text,
        conversationId: msg.conversationId,
        inReplyTo: msg.inReplyTo,
        receivedAtMs: Date.now(),
        contentFingerprint: contentFingerprint(msg.text),
      };
      await writeFileDurablyAsync(path, JSON.stringify(entry));
      this.lastSeq.set(name, seq);
      return { entry, replayed: false };
    };
    this.writing.set(id, (this.writing.get(id) ?? 0) + 1);
    const prev = this.chains.get(name) ?? Promise.resolve();
    const next = prev.then(run, run).finally(() => {
      const left = (this.writing.get(id) ?? 1) - 1;
      if (left > 0) this.writing.set(id, left);
      else this.writing.delete(id);
    });
    this.chains.set(
      name,
      next.catch(() => {}),
    );
    return next;
  }

  /**
   * Proves an id absent for good, or says why it cannot. Synchronous from the check to the durable
   * fence, so no append starts in between; an append that starts later finds the fence and writes
   * nothing. A write cut by a crash leaves only its temp file (written, then renamed): absent.
   */
  fence(name: string, given: string): MailboxFence {
    const deliveryId = canonicalUuid(given);
    if (deliveryId === undefined) throw new Error(`delivery id is not a uuid: ${quoteInput(given)}`);
    const path = this.entryPath(name, deliveryId);
    if (this.writing.has(deliveryId)) return { state: "writing", path };
    if (existsSync(path)) return { state: "found", path, entry: parseMailboxEntry(readFileSync(path, "utf8"), path) };
    const fencePath = this.fencePath(name, deliveryId);
    if (existsSync(fencePath)) {
      // Its existence is the fence; an unreadable body (not one we wrote: ours are renamed whole) is rewritten.
      const earlier = (() => {
        try {
          return (JSON.parse(readFileSync(fencePath, "utf8")) as { fencedAtMs?: unknown }).fencedAtMs;
        } catch {
          return undefined;
        }
      })();
      if (typeof earlier === "number") return { state: "fenced", path, fencedAtMs: earlier };
    }
    const fencedAtMs = Date.now();
    writeFileDurably(fencePath, JSON.stringify({ schemaVersion: 1, deliveryId, fencedAtMs }));
    return { state: "fenced", path, fencedAtMs };
  }

  // A uuid (checked by the callers) is a plain file name: the directory and it need no join.
  private entryPath(name: string, deliveryId: string): string {
    return `${this.dir(name)}${sep}${deliveryId}.json`;
  }

  // A dot file: list() and the worker's reads skip it.
  private fencePath(name: string, deliveryId: string): string {
    return `${this.dir(name)}${sep}.${deliveryId}.fence`;
  }

  /** Every retained entry in arrival order. Unreadable files are reported, not skipped silently. */
  list(name: string): { entries: MailboxEntry[]; unreadable: string[] } {
    const entries: MailboxEntry[] = [];
    const unreadable: string[] = [];
    for (const file of readdirSync(this.dir(name))) {
      if (!file.endsWith(".json") || file.startsWith(".")) continue;
      const path = join(this.dir(name), file);
      try {
        entries.push(parseMailboxEntry(readFileSync(path, "utf8"), path));
      } catch {
        unreadable.push(file);
      }
    }
    entries.sort((a, b) => a.seq - b.seq);
    return { entries, unreadable };
  }

  /** Entries after the read cursor; advances the cursor unless peeking. */
  readUnread(name: string, opts: { peek: boolean }): { entries: MailboxEntry[]; unreadable: string[] } {
    const cursorPath = join(this.dir(name), ".cursor");
    const cursor = existsSync(cursorPath) ? Number.parseInt(readFileSync(cursorPath, "utf8"), 10) || 0 : 0;
    const all = this.list(name);
    const entries = all.entries.filter((e) => e.seq > cursor);
    const last = entries.at(-1);
    if (!opts.peek && last) writeFileDurably(cursorPath, String(last.seq));
    return { entries, unreadable: all.unreadable };
  }
}

/** One entry file's text as an entry; throws when it is not one. */
export function parseMailboxEntry(raw: string, path: string): MailboxEntry {
  const e = JSON.parse(raw) as MailboxEntry;
  if (e.schemaVersion !== 1 || typeof e.deliveryId !== "string" || typeof e.seq !== "number") {
    throw new Error(`not a mailbox entry: ${path}`);
  }
  return e;
}
