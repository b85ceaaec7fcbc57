/**
 * The authority check a notice carries (issue 11: notices were sent with a hard-coded
 * authority age of 0, whatever the seat had become while the notice waited for its turn).
 * Checked inside the seat's turn, right before the send: the fence still needs its notice
 * (no other process resolved or acknowledged it meanwhile), the seat is still present, and
 * its occupant is the one the notice was planned for. The notice's authority age is the
 * time since this check, as for a delivery.
 */
import { eq } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { fences, seats, type SeatRowDb } from "../db/schema.js";

export type NoticeAuthority = { ok: true; seat: SeatRowDb; checkedAt: number } | { ok: false; why: string };

export async function checkNoticeAuthority(
  db: Db,
  deliveryId: string,
  planned: Pick<SeatRowDb, "id" | "occupantId">,
): Promise<NoticeAuthority> {
  const [fence] = await db.select().from(fences).where(eq(fences.deliveryId, deliveryId));
  if (!fence) return { ok: false, why: "the fence is gone" };
  if (fence.resolvedAt) return { ok: false, why: "the receipt was resolved meanwhile" };
  if (fence.noticeAcknowledgedAt) return { ok: false, why: "another process's notice was acknowledged meanwhile" };
  const [seat] = await db.select().from(seats).where(eq(seats.id, planned.id));
  if (!seat?.present) return { ok: false, why: "the seat is no longer present" };
  if (seat.occupantId !== planned.occupantId)
    return { ok: false, why: `the seat's occupant changed from ${planned.occupantId} to ${seat.occupantId}` };
  return { ok: true, seat, checkedAt: performance.now() };
}
