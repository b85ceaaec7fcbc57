/**
 * Delivery fences per seat (ADR 0207, VUH-1779): an unresolved delivery fences only
 * itself. A resend with its id is caught by the call receipt; a resend with its exact
 * content (trimmed, LF-normalised fingerprint) is caught here. Every other message flows.
 * Fence rows also carry the notice and `previous` bookkeeping of each unresolved receipt.
 */
import { and, desc, eq, gt, inArray, isNotNull, isNull, lt, ne, or } from "drizzle-orm";
import { deliveryReceipts, fences, type DeliveryReceipt, type Fence } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";
import { ReceiptState, UNRESOLVED_STATES } from "../../shared/verdicts.js";

/** How long an abandoned original still refuses its exact content (rule 24: completed fences, 7 days). */
export const ABANDONED_CONTENT_FENCE_MS = 7 * 24 * 60 * 60 * 1000;

/** The unresolved (or recently abandoned) original on this seat with the same content, if any. */
export async function contentFenceFor(db: Db | Tx, seatIdValue: string, contentFingerprint: string, selfId: string, now: Date): Promise<DeliveryReceipt | undefined> {
  const [row] = await db
    .select()
    .from(deliveryReceipts)
    .where(
      and(
        eq(deliveryReceipts.seatId, seatIdValue),
        eq(deliveryReceipts.contentFingerprint, contentFingerprint),
        ne(deliveryReceipts.id, selfId),
        or(
          inArray(deliveryReceipts.state, [...UNRESOLVED_STATES]),
          and(eq(deliveryReceipts.state, ReceiptState.AbandonedUnknown), gt(deliveryReceipts.settledAt, new Date(now.getTime() - ABANDONED_CONTENT_FENCE_MS))),
        ),
      ),
    )
    .orderBy(deliveryReceipts.createdAt)
    .limit(1);
  return row;
}

/** Opens the fence of a receipt that became unresolved after dispatch (idempotent). */
export async function openFence(db: Db | Tx, r: { id: string; seatId: string; contentFingerprint: string; conversationId: string }, now: Date): Promise<void> {
  await db
    .insert(fences)
    .values({ deliveryId: r.id, seatId: r.seatId, contentFingerprint: r.contentFingerprint, conversationId: r.conversationId, openedAt: now })
    .onConflictDoNothing();
}

export async function resolveFence(db: Db | Tx, deliveryId: string, disposition: string, now: Date): Promise<void> {
  await db.update(fences).set({ resolvedAt: now, disposition }).where(and(eq(fences.deliveryId, deliveryId), isNull(fences.resolvedAt)));
}

/** Settled originals of this seat and conversation not yet reported to the lead as `previous`. */
export async function unreportedPrevious(db: Db | Tx, seatIdValue: string, conversationId: string): Promise<Fence[]> {
  return db
    .select()
    .from(fences)
    .where(and(eq(fences.seatId, seatIdValue), eq(fences.conversationId, conversationId), isNotNull(fences.resolvedAt), isNull(fences.previousReportedAt)))
    .orderBy(desc(fences.resolvedAt));
}

export async function markPreviousReported(db: Db | Tx, deliveryIds: string[], now: Date): Promise<void> {
  if (deliveryIds.length) await db.update(fences).set({ previousReportedAt: now }).where(inArray(fences.deliveryId, deliveryIds));
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
    .where(and(isNull(fences.resolvedAt), isNull(fences.noticeAcknowledgedAt), lt(fences.noticeAttempts, maxAttempts), seatIdValue ? eq(fences.seatId, seatIdValue) : undefined));
}
