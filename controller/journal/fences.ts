/**
 * Delivery fences per seat (ADR 0207, VUH-1779): an unresolved delivery fences only
 * itself. A resend with its id is caught by the call receipt; a resend with its exact
 * content (trimmed, LF-normalised fingerprint) is caught by the admission statement
 * (delivery/admit.ts), and the settle statement opens the fence (delivery/settle.ts).
 * Fence rows also carry the notice and `previous` bookkeeping of each unresolved receipt;
 * these are the cold-path reads and writes on them.
 */
import { and, eq, isNull, lt } from "drizzle-orm";
import { fences, type Fence } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";

/** How long an abandoned original still refuses its exact content (rule 24: completed fences, 7 days). */
export const ABANDONED_CONTENT_FENCE_MS = 7 * 24 * 60 * 60 * 1000;

/** Opens the fence of a receipt that became unresolved after dispatch (idempotent). */
export async function openFence(
  db: Db | Tx,
  r: { id: string; seatId: string; contentFingerprint: string; conversationId: string },
  now: Date,
): Promise<void> {
  await db
    .insert(fences)
    .values({
      deliveryId: r.id,
      seatId: r.seatId,
      contentFingerprint: r.contentFingerprint,
      conversationId: r.conversationId,
      openedAt: now,
    })
    .onConflictDoNothing();
}

export async function resolveFence(db: Db | Tx, deliveryId: string, disposition: string, now: Date): Promise<void> {
  await db
    .update(fences)
    .set({ resolvedAt: now, disposition })
    .where(and(eq(fences.deliveryId, deliveryId), isNull(fences.resolvedAt)));
}

/** Open fences on a seat older than `olderThan`: candidates for the unattended release. */
export async function openFencesOlderThan(db: Db, seatIdValue: string, olderThan: Date): Promise<Fence[]> {
  return db
    .select()
    .from(fences)
    .where(and(eq(fences.seatId, seatIdValue), isNull(fences.resolvedAt), lt(fences.openedAt, olderThan)));
}

/** Open fences whose notice was never acknowledged and may still be tried. */
export async function fencesNeedingNotice(db: Db, maxAttempts: number, seatIdValue?: string): Promise<Fence[]> {
  return db
    .select()
    .from(fences)
    .where(
      and(
        isNull(fences.resolvedAt),
        isNull(fences.noticeAcknowledgedAt),
        lt(fences.noticeAttempts, maxAttempts),
        seatIdValue ? eq(fences.seatId, seatIdValue) : undefined,
      ),
    );
}
