/**
 * A mailbox seat's session as reconciliation reads it (ReadSession): every entry's id, sequence,
 * fingerprint and arrival, and every file that cannot be read, since any one makes the session
 * a gap (inventory scenario 9: an unreadable transcript keeps the original fenced).
 *
 * A mailbox only grows, and the plain list() read and parsed every file, synchronously: on the
 * HA bench's mailbox of 8,100 entries 125–217 ms warm and 1.6 s cold, in which the agent served
 * none of its other seats, and a reconcile comes for each uncertain call after a replica dies.
 * So this read (ADR 0045)
 * - gives the loop back every CHUNK files: a read of any size holds the agent for a few ms at a
 *   time, and the other seats' deliveries go on between its chunks;
 * - reads a file only when it is new or changed since the last read: a file whose inode, size,
 *   modification and change times all match what it had when it parsed is the entry it was,
 *   and costs one stat. A file damaged in place changes its times (and its size), so it is read
 *   again and found unreadable, as at the first read. Only what this read needs is kept (no
 *   text): about 200 bytes an entry.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseMailboxEntry, type MailboxEntry, type MailboxStore } from "./store.js";

export type SessionEntryOf = Pick<MailboxEntry, "deliveryId" | "seq" | "receivedAtMs" | "contentFingerprint">;

/** Files handled between two turns of the event loop: about 1–2 ms of reads and parses here. */
export const CHUNK = 64;

interface Parsed {
  /** inode, size, mtime and ctime when it parsed. */
  stamp: string;
  entry: SessionEntryOf;
}

export class MailboxSessionReader {
  // Per mailbox, the files parsed by the last read that found them readable. Bounded by the
  // mailboxes this agent serves and their files.
  private readonly parsed = new Map<string, Map<string, Parsed>>();

  constructor(private readonly store: MailboxStore) {}

  /** The mailbox's entries in sequence order, and the files that could not be read. */
  async read(name: string): Promise<{ entries: SessionEntryOf[]; unreadable: string[] }> {
    const dir = this.store.dir(name);
    const known = this.parsed.get(name) ?? new Map<string, Parsed>();
    const now = new Map<string, Parsed>();
    const unreadable: string[] = [];
    let handled = 0;
    for (const file of readdirSync(dir)) {
      if (!file.endsWith(".json") || file.startsWith(".")) continue;
      if (++handled % CHUNK === 0) await new Promise((r) => setImmediate(r));
      const path = join(dir, file);
      const st = statSync(path, { throwIfNoEntry: false });
      // Removed since the listing: no longer part of the session.
      if (st === undefined) continue;
      const stamp = `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
      const had = known.get(file);
      if (had?.stamp === stamp) {
        now.set(file, had);
        continue;
      }
      try {
        const e = parseMailboxEntry(readFileSync(path, "utf8"), path);
        now.set(file, {
          stamp,
          entry: {
            deliveryId: e.deliveryId,
            seq: e.seq,
            receivedAtMs: e.receivedAtMs,
            contentFingerprint: e.contentFingerprint,
          },
        });
      } catch {
        unreadable.push(file);
      }
    }
    this.parsed.set(name, now);
    const entries = [...now.values()].map((p) => p.entry).sort((a, b) => a.seq - b.seq);
    return { entries, unreadable };
  }
}
