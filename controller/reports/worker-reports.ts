/**
 * Worker reports (message_clankie): accepted from the seat's agent, owned by the
 * conversation that last messaged the seat (else global-default, tagged unadopted — never
 * the worker's choice), offered to that lead, acknowledged by it. Retention (ADR 0207,
 * VUH-2410): pending and delivered reports are kept; a read one for 24 hours after readAt
 * (acceptedAt where readAt is missing). After that its status reads unknown, never not_sent.
 */
import { and, desc, eq, inArray, ne, notLike, sql } from "drizzle-orm";
import { deliveryReceipts, hireReceipts, workerReports } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { seatId } from "../../shared/ids.js";
import { DEFAULT_CONVERSATION } from "../leads/conversations.js";
import { NOTICE_SENDER } from "../delivery/notices.js";
import { reportOwner } from "../hire/report-owner.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { HireState } from "../hire/bodies.js";

export const READ_REPORT_RETENTION_MS = 24 * 60 * 60 * 1000;
export const MAX_ACK_PER_CALL = 100;
/** Receipt states in which the seat's host took the message. */
const HOST_ADMITTED = [ReceiptState.Delivered, ReceiptState.Queued, ReceiptState.Steered, ReceiptState.Started];

export interface IncomingReport {
  id: string;
  seatName: string;
  text: string;
  createdAtMs: number;
}

/** How long a report waits for the message or hire that may own it to be decided (bounded). */
export const ROUTING_WAIT_MS = 10_000;
const ROUTING_POLL_MS = 100;

/**
 * A worker answers the turn a message or a hire's brief started, often before that call is
 * decided: the receipt is still dispatching, or the hire still launching (its seat unknown).
 * Routing then would file the report as unadopted for good, so it waits, bounded, until
 * neither is open; past the bound it routes on what is decided.
 */
async function untilRoutingDecided(db: Db, machine: string, seat: string): Promise<void> {
  const deadline = Date.now() + ROUTING_WAIT_MS;
  for (;;) {
    const [open] = await db
      .select({ id: deliveryReceipts.id })
      .from(deliveryReceipts)
      .where(
        and(
          eq(deliveryReceipts.seatId, seat),
          eq(deliveryReceipts.state, ReceiptState.Dispatching),
          ne(deliveryReceipts.conversationId, NOTICE_SENDER),
          notLike(deliveryReceipts.conversationId, "peer:%"),
        ),
      )
      .limit(1);
    const [launching] = open
      ? [undefined]
      : await db
          .select({ id: hireReceipts.id })
          .from(hireReceipts)
          .where(
            and(
              eq(hireReceipts.machine, machine),
              inArray(hireReceipts.state, [HireState.Reserved, HireState.Launching]),
            ),
          )
          .limit(1);
    if (!open && !launching) return;
    if (Date.now() >= deadline) return;
    await new Promise((r) => setTimeout(r, ROUTING_POLL_MS));
  }
}

/** Stores reports idempotently by id; returns every id now held. */
export async function acceptReports(db: Db, machine: string, reports: IncomingReport[], now: Date): Promise<string[]> {
  const accepted: string[] = [];
  for (const r of reports) {
    const seat = seatId(machine, r.seatName);
    await untilRoutingDecided(db, machine, seat);
    const [owner] = await db
      .select({ conversationId: deliveryReceipts.conversationId, at: deliveryReceipts.createdAt })
      .from(deliveryReceipts)
      // Peers (conversation "peer:<seat>") carry no lead authority: a worker's report never goes to one.
      // Only a message the seat's host admitted adopts its reports (rule 50): a refused, unsent or
      // uncertain message_seat from another conversation does not take them over.
      .where(
        and(
          eq(deliveryReceipts.seatId, seat),
          ne(deliveryReceipts.conversationId, NOTICE_SENDER),
          notLike(deliveryReceipts.conversationId, "peer:%"),
          inArray(deliveryReceipts.state, HOST_ADMITTED),
        ),
      )
      .orderBy(desc(deliveryReceipts.createdAt))
      .limit(1);
    const routed = await reportOwner(db, seat, owner);
    await db
      .insert(workerReports)
      .values({
        id: r.id,
        seatId: seat,
        conversationId: routed?.conversationId ?? DEFAULT_CONVERSATION,
        unadopted: !routed,
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
    .where(
      and(eq(workerReports.conversationId, conversationId), inArray(workerReports.state, ["pending", "delivered"])),
    )
    .orderBy(workerReports.createdAt)
    .limit(limit);
  const pending = rows.filter((r) => r.state === "pending").map((r) => r.id);
  if (pending.length)
    await db
      .update(workerReports)
      .set({ state: "delivered", offeredAt: now })
      .where(inArray(workerReports.id, pending));
  return rows.map((r) => ({
    deliveryId: r.id,
    seat: r.seatId,
    text: r.text,
    createdAt: r.createdAt.toISOString(),
    unadopted: r.unadopted,
  }));
}

/** Marks offered reports of this conversation read; anything else is refused by id. */
export async function acknowledgeReports(
  db: Db,
  conversationId: string,
  ids: string[],
  now: Date,
): Promise<{ acknowledged: string[]; refused: string[] }> {
  const rows = await db
    .update(workerReports)
    .set({ state: "read", readAt: now })
    .where(
      and(
        inArray(workerReports.id, ids),
        eq(workerReports.conversationId, conversationId),
        eq(workerReports.state, "delivered"),
      ),
    )
    .returning({ id: workerReports.id });
  const acknowledged = rows.map((r) => r.id);
  return { acknowledged, refused: ids.filter((id) => !acknowledged.includes(id)) };
}

/** A report's status for its conversation: its state, or unknown once aged out (never not_sent). */
export async function reportStatus(db: Db, conversationId: string, id: string): Promise<string> {
  const [row] = await db
    .select({ state: workerReports.state })
    .from(workerReports)
    .where(and(eq(workerReports.id, id), eq(workerReports.conversationId, conversationId)));
  return !row || row.state === EXPIRED ? "unknown" : row.state;
}

/** The state of a read report past its retention: text gone, id kept (rule 51). */
export const EXPIRED = "expired";

/**
 * Empties read reports 24 h after they were read. Unread, pending and delivered ones stay. The
 * row stays as a tombstone without its text: a later status read must answer unknown, never
 * not_sent (rule 51), and without the row a worker's settle_unknown would tombstone the id as
 * never received.
 */
export async function purgeReadReports(db: Db, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - READ_REPORT_RETENTION_MS);
  const gone = await db
    .update(workerReports)
    .set({ state: EXPIRED, text: "" })
    .where(
      and(
        eq(workerReports.state, "read"),
        sql`coalesce(${workerReports.readAt}, ${workerReports.acceptedAt}) < ${cutoff.toISOString()}::timestamptz`,
      ),
    )
    .returning({ id: workerReports.id });
  return gone.length;
}
