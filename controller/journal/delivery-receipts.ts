/** Delivery receipts: one per message dispatched to a seat, from "dispatching" to its outcome. */
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { deliveryReceipts, type DeliveryReceipt, type ProofRow } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";
import { ReceiptState, UNRESOLVED_STATES } from "../../shared/verdicts.js";

export interface NewDelivery {
  id: string;
  conversationId: string;
  seatId: string;
  contentFingerprint: string;
  mode: string;
  inReplyTo?: string | undefined;
}

export async function openDelivery(tx: Tx, d: NewDelivery): Promise<void> {
  await tx.insert(deliveryReceipts).values({
    id: d.id,
    conversationId: d.conversationId,
    seatId: d.seatId,
    contentFingerprint: d.contentFingerprint,
    mode: d.mode,
    state: ReceiptState.Dispatching,
    inReplyTo: d.inReplyTo ?? null,
  });
}

export async function markDispatched(db: Db, id: string, at: Date): Promise<void> {
  await db.update(deliveryReceipts).set({ dispatchedAt: at }).where(eq(deliveryReceipts.id, id));
}

export interface DeliveryOutcome {
  state: ReceiptState;
  reason?: string | undefined;
  detail?: string | undefined;
  nativeReceiptId?: string | undefined;
  proofAgeMs?: number | undefined;
  proofs?: ProofRow[] | undefined;
}

export async function settleDelivery(db: Db | Tx, id: string, o: DeliveryOutcome, now: Date): Promise<void> {
  const unresolved = (UNRESOLVED_STATES as readonly string[]).includes(o.state);
  await db
    .update(deliveryReceipts)
    .set({
      state: o.state,
      reason: o.reason ?? null,
      detail: o.detail ?? null,
      nativeReceiptId: o.nativeReceiptId ?? null,
      proofAgeMs: o.proofAgeMs ?? null,
      proofs: o.proofs ?? null,
      settledAt: unresolved ? null : now,
    })
    .where(eq(deliveryReceipts.id, id));
}

export async function findDelivery(db: Db, id: string): Promise<DeliveryReceipt | undefined> {
  const [row] = await db.select().from(deliveryReceipts).where(eq(deliveryReceipts.id, id));
  return row;
}

export async function listDeliveries(db: Db, opts: { limit: number; unresolvedOnly: boolean }): Promise<DeliveryReceipt[]> {
  const q = db.select().from(deliveryReceipts);
  const filtered = opts.unresolvedOnly ? q.where(inArray(deliveryReceipts.state, [...UNRESOLVED_STATES])) : q;
  return filtered.orderBy(desc(deliveryReceipts.createdAt)).limit(opts.limit);
}

export async function countUnresolvedBySeat(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .select({ seatId: deliveryReceipts.seatId, n: sql<number>`count(*)::int` })
    .from(deliveryReceipts)
    .where(inArray(deliveryReceipts.state, [...UNRESOLVED_STATES]))
    .groupBy(deliveryReceipts.seatId);
  return new Map(rows.map((r) => [r.seatId, r.n]));
}

export async function unresolvedFor(db: Db, seatIdValue: string, conversationId: string): Promise<DeliveryReceipt[]> {
  return db
    .select()
    .from(deliveryReceipts)
    .where(and(eq(deliveryReceipts.seatId, seatIdValue), eq(deliveryReceipts.conversationId, conversationId), inArray(deliveryReceipts.state, [...UNRESOLVED_STATES])));
}
