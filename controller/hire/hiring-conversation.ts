/**
 * Which conversation hired a seat (rule 50): the hire receipt that produced the seat's
 * current occupant. Reports from the seat go there unless a later message_seat from another
 * conversation adopted it; list_seats shows it.
 */
import { and, desc, eq, inArray } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { hireReceipts } from "../db/schema.js";
import { HireState } from "./bodies.js";

export interface HiredBy {
  hireId: string;
  conversationId: string;
  at: Date;
}

const HIRED: string[] = [HireState.Spawned, HireState.DeliveryUnconfirmed];

export async function hiredBy(db: Db, seatId: string, occupantId?: string): Promise<HiredBy | undefined> {
  const [row] = await db
    .select({
      id: hireReceipts.id,
      conversationId: hireReceipts.conversationId,
      at: hireReceipts.updatedAt,
      occupantId: hireReceipts.occupantId,
    })
    .from(hireReceipts)
    .where(and(eq(hireReceipts.seatId, seatId), inArray(hireReceipts.state, HIRED)))
    .orderBy(desc(hireReceipts.updatedAt))
    .limit(1);
  if (!row) return undefined;
  // A different occupant in the same pane was not hired by anyone.
  if (occupantId !== undefined && row.occupantId && row.occupantId !== occupantId) return undefined;
  return { hireId: row.id, conversationId: row.conversationId, at: row.at };
}

/** Every seat's hire, in one read, for list_seats. */
export async function hiredSeats(db: Db): Promise<Map<string, HiredBy & { occupantId: string | null }>> {
  const rows = await db
    .select({
      id: hireReceipts.id,
      seatId: hireReceipts.seatId,
      conversationId: hireReceipts.conversationId,
      at: hireReceipts.updatedAt,
      occupantId: hireReceipts.occupantId,
    })
    .from(hireReceipts)
    .where(inArray(hireReceipts.state, HIRED))
    .orderBy(hireReceipts.updatedAt);
  const out = new Map<string, HiredBy & { occupantId: string | null }>();
  for (const r of rows)
    if (r.seatId)
      out.set(r.seatId, { hireId: r.id, conversationId: r.conversationId, at: r.at, occupantId: r.occupantId });
  return out;
}
