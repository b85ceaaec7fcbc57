/**
 * The open MCP sessions, bounded (issue 11: 20,000 `initialize` calls grew the controller
 * by 1.4 GB for good). A session unused for `idleMs` is closed; a conversation holds at
 * most `perConversation` sessions, and a new one closes that conversation's oldest idle
 * session first. A session with a request in progress is never closed by either rule.
 * The table is one replica's; the hooks carry its closes and its sessions' use to the fleet
 * (fleet-sessions.ts, ADR 0037), so the same bounds hold on every replica.
 */
export interface TableEntry {
  readonly conversationId: string;
  close(): Promise<void>;
}

interface Slot<S extends TableEntry> {
  session: S;
  lastUsedMs: number;
  busy: number;
  /** Used (or busy) since the last sweep: the sweep reports it to the fleet as in use. */
  used: boolean;
}

export interface TableHooks {
  /** A session this table closed by one of its bounds. */
  closed?(id: string, why: "idle" | "cap"): void;
  /** Each sweep: the sessions used or busy since the previous one. */
  inUse?(ids: string[]): void;
}

export class SessionTable<S extends TableEntry> {
  private readonly slots = new Map<string, Slot<S>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly idleMs: number,
    private readonly perConversation: number,
    private readonly now: () => number = () => performance.now(),
    private readonly hooks: TableHooks = {},
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(60_000, idleMs / 4)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.slots.size;
  }

  get(id: string): S | undefined {
    return this.slots.get(id)?.session;
  }

  /** Room for one more session of `conversationId`: closes its oldest idle one when full; false when all are busy. */
  makeRoom(conversationId: string): boolean {
    const mine = [...this.slots.entries()].filter(([, s]) => s.session.conversationId === conversationId);
    if (mine.length < this.perConversation) return true;
    const idle = mine.filter(([, s]) => s.busy === 0).sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs);
    const excess = mine.length - this.perConversation + 1;
    if (idle.length < excess) return false;
    for (const [id] of idle.slice(0, excess)) this.evict(id, "cap");
    return true;
  }

  add(id: string, session: S): void {
    this.slots.set(id, { session, lastUsedMs: this.now(), busy: 0, used: false });
  }

  /** Closes this replica's copy of a session the fleet ended (unless a request is in progress on it). */
  drop(id: string): void {
    if ((this.slots.get(id)?.busy ?? 1) === 0) this.evict(id);
  }

  delete(id: string): void {
    this.slots.delete(id);
  }

  /** Marks the session in use for the duration of `work`. */
  async use<T>(id: string, work: () => Promise<T>): Promise<T> {
    const slot = this.slots.get(id);
    if (slot) {
      slot.busy++;
      slot.used = true;
    }
    try {
      return await work();
    } finally {
      if (slot) {
        slot.busy--;
        slot.lastUsedMs = this.now();
      }
    }
  }

  sweep(): void {
    const cutoff = this.now() - this.idleMs;
    const inUse: string[] = [];
    for (const [id, s] of this.slots) {
      if (s.busy > 0 || s.used) inUse.push(id);
      s.used = false;
      if (s.busy === 0 && s.lastUsedMs <= cutoff) this.evict(id, "idle");
    }
    if (inUse.length) this.hooks.inUse?.(inUse);
  }

  /** Every session, removed; the caller closes them. */
  drain(): S[] {
    clearInterval(this.sweeper);
    const all = [...this.slots.values()].map((s) => s.session);
    this.slots.clear();
    return all;
  }

  private evict(id: string, why?: "idle" | "cap"): void {
    const slot = this.slots.get(id);
    if (!slot) return;
    this.slots.delete(id);
    if (why) this.hooks.closed?.(id, why);
    void slot.session.close().catch(() => {});
  }
}
