/**
 * The controller's open connections, and who gives way when they are too many (issue 32,
 * ADR 0034). A connection is "unproven" until it has sent one complete request (HTTP/1.1
 * headers, or an HTTP/2 stream's HEADERS). Slow header senders never prove themselves, so:
 * one peer address may hold only so many unproven connections (a new one closes that
 * address's oldest unproven one), and when the table is full a new connection closes the
 * oldest unproven connection of all, never a proven one; only a table full of proven
 * connections refuses the newcomer. A lead opening a fresh connection thus gets through while
 * hundreds of slow senders are held, and an attacker's own connections churn each other out.
 */
import type { Socket } from "node:net";

export interface ConnectionTableLimits {
  /** Open connections in all. */
  maxConnections: number;
  /** Open connections one peer address may hold. */
  maxConnectionsPerPeer: number;
  /** Connections one peer address may hold before any of them has sent a complete request. */
  maxUnprovenPerPeer: number;
}

interface Entry {
  socket: Socket;
  peer: string;
  proven: boolean;
}

const ENTRY = Symbol("clankie.connection");

export class ConnectionTable {
  // Insertion order is age order: the first unproven entry found is the oldest.
  private readonly entries = new Set<Entry>();
  private readonly perPeer = new Map<string, number>();
  private readonly unprovenPerPeer = new Map<string, number>();
  private evictedCount = 0;

  constructor(private readonly limits: ConnectionTableLimits) {}

  size(): number {
    return this.entries.size;
  }

  /** Connections closed to make room so far (for tests and /metrics). */
  evicted(): number {
    return this.evictedCount;
  }

  /** Takes a new connection in, making room if it can; false when it was refused and destroyed. */
  admit(socket: Socket): boolean {
    const peer = socket.remoteAddress ?? "?";
    const onPeer = this.perPeer.get(peer) ?? 0;
    if (onPeer >= this.limits.maxConnectionsPerPeer && !this.evictOldestUnproven(peer)) return this.refuse(socket);
    if (this.unprovenOf(peer) >= this.limits.maxUnprovenPerPeer) this.evictOldestUnproven(peer);
    if (this.entries.size >= this.limits.maxConnections && !this.evictOldestUnproven()) return this.refuse(socket);
    const entry: Entry = { socket, peer, proven: false };
    (socket as Socket & { [ENTRY]?: Entry })[ENTRY] = entry;
    this.entries.add(entry);
    bump(this.perPeer, peer, 1);
    bump(this.unprovenPerPeer, peer, 1);
    socket.once("close", () => this.remove(entry));
    return true;
  }

  /**
   * The connection under `socket` has sent a complete request. `socket` may be the raw socket
   * or HTTP/2's proxy of it, which forwards property reads to the socket.
   */
  prove(socket: object | undefined): void {
    try {
      const entry = (socket as { [ENTRY]?: Entry } | undefined)?.[ENTRY];
      if (!entry || entry.proven) return;
      entry.proven = true;
      if (this.entries.has(entry)) bump(this.unprovenPerPeer, entry.peer, -1);
    } catch {
      // A destroyed HTTP/2 session's socket proxy throws on every read: nothing left to prove.
    }
  }

  destroyAll(): void {
    for (const e of this.entries) e.socket.destroy();
  }

  private unprovenOf(peer: string): number {
    return this.unprovenPerPeer.get(peer) ?? 0;
  }

  private evictOldestUnproven(peer?: string): boolean {
    for (const e of this.entries) {
      if (e.proven || (peer !== undefined && e.peer !== peer)) continue;
      this.remove(e);
      this.evictedCount++;
      e.socket.destroy();
      return true;
    }
    return false;
  }

  private remove(entry: Entry): void {
    if (!this.entries.delete(entry)) return;
    bump(this.perPeer, entry.peer, -1);
    if (!entry.proven) bump(this.unprovenPerPeer, entry.peer, -1);
  }

  private refuse(socket: Socket): false {
    socket.destroy();
    return false;
  }
}

function bump(counts: Map<string, number>, peer: string, by: number): void {
  const n = (counts.get(peer) ?? 0) + by;
  if (n > 0) counts.set(peer, n);
  else counts.delete(peer);
}
