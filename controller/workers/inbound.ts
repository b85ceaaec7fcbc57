/**
 * message_clankie from a worker in a pane (rule 48, scenario 22), the controller's half. The
 * worker first gets its seat's binding (the seat and its current occupant), and only then
 * sends; a message under a binding whose occupant has since been replaced is refused, never
 * filed under the new occupant. A stored message is retained for the hiring lead, not read.
 * A status read with settle_unknown tombstones an id the controller never received, so that
 * not_sent is definite: a late copy of it is refused too. This ledger is the worker-inbound
 * one, separate from the operator call receipts (rule 13).
 */
import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { seats, workerReports } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { seatId } from "../../shared/ids.js";
import { acceptReports, EXPIRED } from "../reports/worker-reports.js";

/** The tombstone state of an id declared never received. Never offered to a lead. */
export const NOT_SENT = "not_sent";

export function bindingOf(id: string, occupantId: string): string {
  return createHash("sha256").update(`clankie-worker-binding\0${id}\0${occupantId}`).digest("hex");
}

export type BindOutcome =
  | { bound: true; seatId: string; binding: string }
  | { bound: false; reason: string; detail: string };

export async function bindWorker(db: Db, machine: string, seatName: string, occupantId: string): Promise<BindOutcome> {
  const id = seatId(machine, seatName);
  const [row] = await db
    .select({ occupantId: seats.occupantId, present: seats.present })
    .from(seats)
    .where(eq(seats.id, id));
  if (!row?.present) return { bound: false, reason: "unknown_seat", detail: `the controller has no seat ${id}` };
  if (row.occupantId !== occupantId)
    return {
      bound: false,
      reason: "occupant_changed",
      detail: `seat ${id} now has another occupant than the caller's`,
    };
  return { bound: true, seatId: id, binding: bindingOf(id, occupantId) };
}

export type SubmitOutcome =
  | { stage: "stored" }
  | { stage: "rejected"; definitiveNotSent: true; reason: string; detail: string };

export async function submitWorkerMessage(
  db: Db,
  machine: string,
  m: { seatName: string; binding: string; id: string; text: string; createdAtMs: number },
  now: Date,
): Promise<SubmitOutcome> {
  const id = seatId(machine, m.seatName);
  const [seat] = await db
    .select({ occupantId: seats.occupantId, present: seats.present })
    .from(seats)
    .where(eq(seats.id, id));
  if (!seat?.present || bindingOf(id, seat.occupantId) !== m.binding) {
    return {
      stage: "rejected",
      definitiveNotSent: true,
      reason: "binding_stale",
      detail: `the binding no longer names seat ${id}'s current occupant; nothing was stored`,
    };
  }
  await acceptReports(db, machine, [{ id: m.id, seatName: m.seatName, text: m.text, createdAtMs: m.createdAtMs }], now);
  const [held] = await db
    .select({ seatId: workerReports.seatId, state: workerReports.state })
    .from(workerReports)
    .where(eq(workerReports.id, m.id));
  if (held?.state === NOT_SENT)
    return {
      stage: "rejected",
      definitiveNotSent: true,
      reason: "settled_not_sent",
      detail: `id ${m.id} was already settled as never received; nothing was stored`,
    };
  if (held?.seatId !== id)
    return {
      stage: "rejected",
      definitiveNotSent: true,
      reason: "id_in_use",
      detail: `id ${m.id} belongs to another seat's message; nothing was stored`,
    };
  return { stage: "stored" };
}

export type StatusOutcome = { stage: string; definitiveNotSent: boolean; detail: string };

export async function workerMessageStatus(
  db: Db,
  machine: string,
  seatName: string,
  id: string,
  settleUnknown: boolean,
  now: Date,
): Promise<StatusOutcome> {
  const seat = seatId(machine, seatName);
  const read = async () =>
    (
      await db
        .select({ seatId: workerReports.seatId, state: workerReports.state })
        .from(workerReports)
        .where(eq(workerReports.id, id))
    )[0];
  let row = await read();
  if (!row && settleUnknown) {
    // First write wins: either the message got in first (stored), or the tombstone does and a late copy is refused.
    await db
      .insert(workerReports)
      .values({
        id,
        seatId: seat,
        conversationId: "",
        unadopted: true,
        text: "",
        state: NOT_SENT,
        createdAt: now,
        acceptedAt: now,
      })
      .onConflictDoNothing();
    row = await read();
  }
  if (!row) return { stage: "unknown", definitiveNotSent: false, detail: `the controller holds no message ${id}` };
  if (row.seatId !== seat)
    return { stage: "unknown", definitiveNotSent: false, detail: `message ${id} is not this seat's` };
  if (row.state === NOT_SENT)
    return {
      stage: NOT_SENT,
      definitiveNotSent: true,
      detail: `the controller never received message ${id} and now refuses it for good`,
    };
  // Rule 51: received, read, and past its retention; what became of it is no longer known here.
  if (row.state === EXPIRED)
    return {
      stage: "unknown",
      definitiveNotSent: false,
      detail: `message ${id} was received and read, and its record has expired (24 h after it was read); it is never settled not sent`,
    };
  return {
    stage: row.state === "pending" ? "stored" : row.state,
    definitiveNotSent: false,
    detail: row.state === "read" ? "the lead has read it" : "retained for the lead, not yet read",
  };
}
