/**
 * Worker reports (message_clankie): accepted from the seat's agent, owned by the
 * conversation that last messaged the seat (else global-default, tagged unadopted — never
 * the worker's choice), offered to that lead, acknowledged by it. Retention (ADR 0207,
 * VUH-2410): pending and delivered reports are kept; a read one for 24 hours after readAt
 * (acceptedAt where readAt is missing). After that its status reads unknown, never not_sent.
 */
import { and, desc, eq, inArray, ne, sql } from "drizzle-orm";
import { deliveryReceipts, workerReports } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { seatId } from "../../shared/ids.js";
import { DEFAULT_CONVERSATION } from "../leads/conversations.js";
import { NOTICE_SENDER } from "../delivery/notices.js";

export const READ_REPORT_RETENTION_MS = 24 * 60 * 60 * 1000;
export const MAX_ACK_PER_CALL = 100;

export interface IncomingReport {
  id: string;
  seatName: string;
  text: string;
  createdAtMs: number;
}

/** Stores reports idempotently by id; returns every id now held. */
export async function acceptReports(db: Db, machine: string, reports: IncomingReport[], now: Date): Promise<string[]> {
  const accepted: string[] = [];
  for (const r of reports) {
    const seat = seatId(machine, r.seatName);
    const [owner] = await db
      .select({ conversationId: deliveryReceipts.conversationId })
      .from(deliveryReceipts)
      .where(and(eq(deliveryReceipts.seatId, seat), ne(deliveryReceipts.conversationId, NOTICE_SENDER)))
      .orderBy(desc(deliveryReceipts.createdAt))
      .limit(1);
    await db
      .insert(workerReports)
      .values({
        id: r.id,
        seatId: seat,
        conversationId: owner?.conversationId ?? DEFAULT_CONVERSATION,
        unadopted: !owner,
        text: r.text,
        state: "pending",
        createdAt: new Date(r.createdAtMs),
        acceptedAt: now,
      })
      .onConflictDoNothing();
    accepted.push(r.id);
  }
  return accepted;
}

/** The conversation's unread reports, oldest first; pending ones become delivered (offered). */
export async function offerReports(db: Db, conversationId: string, limit: number, now: Date) {
  const rows = await db
    .select()
    .from(workerReports)
    .where(and(eq(workerReports.conversationId, conversationId), inArray(workerReports.state, ["pending", "delivered"])))
    .orderBy(workerReports.createdAt)
    .limit(limit);
  const pending = rows.filter((r) => r.state === "pending").map((r) => r.id);
  if (pending.length) await db.update(workerReports).set({ state: "delivered", offeredAt: now }).where(inArray(workerReports.id, pending));
  return rows.map((r) => ({ deliveryId: r.id, seat: r.seatId, text: r.text, createdAt: r.createdAt.toISOString(), unadopted: r.unadopted }));
}

/** Marks offered reports of this conversation read; anything else is refused by id. */
export async function acknowledgeReports(db: Db, conversationId: string, ids: string[], now: Date): Promise<{ acknowledged: string[]; refused: string[] }> {
  const rows = await db
    .update(workerReports)
    .set({ state: "read", readAt: now })
    .where(and(inArray(workerReports.id, ids), eq(workerReports.conversationId, conversationId), eq(workerReports.state, "delivered")))
    .returning({ id: workerReports.id });
  const acknowledged = rows.map((r) => r.id);
  return { acknowledged, refused: ids.filter((id) => !acknowledged.includes(id)) };
}

/** A report's status for its conversation: its state, or unknown once aged out (never not_sent). */
export async function reportStatus(db: Db, conversationId: string, id: string): Promise<string> {
  const [row] = await db.select({ state: workerReports.state }).from(workerReports).where(and(eq(workerReports.id, id), eq(workerReports.conversationId, conversationId)));
  return row?.state ?? "unknown";
}

/** Drops read reports 24 h after they were read. Unread, pending and delivered ones stay. */
export async function purgeReadReports(db: Db, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - READ_REPORT_RETENTION_MS);
  const gone = await db
    .delete(workerReports)
    .where(and(eq(workerReports.state, "read"), sql`coalesce(${workerReports.readAt}, ${workerReports.acceptedAt}) < ${cutoff.toISOString()}::timestamptz`))
    .returning({ id: workerReports.id });
  return gone.length;
}
