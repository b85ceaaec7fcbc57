/**
 * The fleet-wide life of MCP sessions (mcp_sessions, ADR 0037), so the session table's bounds hold
 * for the fleet and not only for the replica that opened a session: a session closed for being
 * idle or over its conversation's cap is over on every replica. Each replica keeps its own bounded
 * table of the sessions it serves (session-table.ts) and touches a row at most every quarter of
 * the idle time, off the request's path, so "idle" is judged with that granularity.
 */

/** Sessions a replica remembers having ended, so asking again costs no query (issue 11's flood, 20,000 ids). */
export const ENDED_REMEMBERED = 20_000;

/** The ids this replica saw end, the oldest forgotten first. */
export class EndedSessions {
  private readonly ids = new Set<string>();

  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > ENDED_REMEMBERED) this.ids.delete(this.ids.values().next().value!);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }
}
import { and, desc, eq, gt, inArray, lt, sql } from "drizzle-orm";
import { mcpSessions } from "../db/schema.js";
import type { Db } from "../db/open.js";

export class FleetSessions {
  constructor(
    private readonly db: Db,
    private readonly idleMs: number,
    private readonly perConversation: number,
  ) {}

  private fresh() {
    return gt(mcpSessions.lastUsedAt, sql`now() - make_interval(secs => ${this.idleMs / 1000})`);
  }

  /** Records a new session; returns the conversation's sessions it pushed over the fleet cap (their rows are gone). */
  async opened(id: string, conversationId: string): Promise<string[]> {
    await this.db.insert(mcpSessions).values({ id, conversationId }).onConflictDoNothing();
    // The least recently used go first; a busy session is touched by its replica's sweeps, so it is not among them.
    const over = this.db
      .select({ id: mcpSessions.id })
      .from(mcpSessions)
      .where(eq(mcpSessions.conversationId, conversationId))
      .orderBy(desc(mcpSessions.lastUsedAt), desc(mcpSessions.id))
      .offset(this.perConversation);
    const gone = await this.db
      .delete(mcpSessions)
      .where(inArray(mcpSessions.id, over))
      .returning({ id: mcpSessions.id });
    return gone.map((r) => r.id);
  }

  /** The session's conversation when the fleet still has it (not closed, used within the idle time). */
  async live(id: string): Promise<string | undefined> {
    const [row] = await this.db
      .select({ conversationId: mcpSessions.conversationId })
      .from(mcpSessions)
      .where(and(eq(mcpSessions.id, id), this.fresh()));
    return row?.conversationId;
  }

  /** Marks sessions used now; returns those the fleet no longer has (closed through another replica). */
  async touch(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const kept = await this.db
      .update(mcpSessions)
      .set({ lastUsedAt: sql`now()` })
      .where(inArray(mcpSessions.id, ids))
      .returning({ id: mcpSessions.id });
    const alive = new Set(kept.map((r) => r.id));
    return ids.filter((id) => !alive.has(id));
  }

  /**
   * A replica closed its copy. Over the cap or closed by its client, the session is over; idle here,
   * it is over only if no replica used it within the idle time either.
   */
  async closed(id: string, why: "idle" | "cap" | "client"): Promise<boolean> {
    const idle = lt(mcpSessions.lastUsedAt, sql`now() - make_interval(secs => ${this.idleMs / 1000})`);
    const gone = await this.db
      .delete(mcpSessions)
      .where(why === "idle" ? and(eq(mcpSessions.id, id), idle) : eq(mcpSessions.id, id))
      .returning({ id: mcpSessions.id });
    return gone.length > 0;
  }
}
