/**
 * A durable inbox on the agent's machine: one JSON file per message, named by its
 * delivery id, so a repeated delivery id is seen and never written twice. A worker reads
 * it with `clankie mailbox read` or the `read_mailbox` MCP tool; a cursor file remembers
 * what was read.
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

export class MailboxStore {
  private readonly chains = new Map<string, Promise<unknown>>();
  // The last sequence number per mailbox, found once by scanning: appends are serialised per
  // mailbox in this one writer, so no counter file (and no second fsync) is needed.
  private readonly lastSeq = new Map<string, number>();
  // Each mailbox's directory path, joined once (the proof and the write ask for it per delivery).
  private readonly dirs = new Map<string, string>();

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
  append(name: string, msg: Omit<MailboxEntry, "schemaVersion" | "seq" | "receivedAtMs" | "contentFingerprint">): Promise<AppendResult> {
    const run = async (): Promise<AppendResult> => {
      // One file per id in its canonical case: "ABC….json" and "abc….json" are one delivery (issue 32 item 4).
      const deliveryId = canonicalUuid(msg.deliveryId);
      if (deliveryId === undefined) throw new Error(`delivery id is not a uuid: ${quoteInput(msg.deliveryId)}`);
      // A uuid (checked above) is a plain file name: the directory and it need no join.
      const path = `${this.dir(name)}${sep}${deliveryId}.json`;
      if (existsSync(path)) return { entry: this.parse(readFileSync(path, "utf8"), path), replayed: true };
      const seq = (this.lastSeq.get(name) ?? this.list(name).entries.reduce((max, e) => Math.max(max, e.seq), 0)) + 1;
      const entry: MailboxEntry = {
        schemaVersion: 1,
        deliveryId,
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
    const prev = this.chains.get(name) ?? Promise.resolve();
    const next = prev.then(run, run);
    this.chains.set(
      name,
      next.catch(() => {}),
    );
    return next;
  }

  /** Every retained entry in arrival order. Unreadable files are reported, not skipped silently. */
  list(name: string): { entries: MailboxEntry[]; unreadable: string[] } {
    const entries: MailboxEntry[] = [];
    const unreadable: string[] = [];
    for (const file of readdirSync(this.dir(name))) {
      if (!file.endsWith(".json") || file.startsWith(".")) continue;
      const path = join(this.dir(name), file);
      try {
        entries.push(this.parse(readFileSync(path, "utf8"), path));
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

  private parse(raw: string, path: string): MailboxEntry {
    const e = JSON.parse(raw) as MailboxEntry;
    if (e.schemaVersion !== 1 || typeof e.deliveryId !== "string" || typeof e.seq !== "number") {
      throw new Error(`not a mailbox entry: ${path}`);
    }
    return e;
  }
}
