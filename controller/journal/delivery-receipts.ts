/** Delivery receipts: one per message dispatched to a seat, from "dispatching" to its outcome. */
import { and, desc, eq, inArray, or, sql } from "drizzle-orm";
import { canonicalUuid } from "../../shared/ids.js";
import { deliveryReceipts, type DeliveryReceipt, type ProofRow } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";
import { type ReceiptState, UNRESOLVED_STATES } from "../../shared/verdicts.js";

export interface DeliveryOutcome {
  state: ReceiptState;
  reason?: string | undefined;
  detail?: string | undefined;
  nativeReceiptId?: string | undefined;
  /** Rule 42's fence fields (Pi); left as they are when absent. */
  nativeMessageId?: string | undefined;
  nativeSessionPath?: string | undefined;
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
      ...(o.nativeMessageId ? { nativeMessageId: o.nativeMessageId } : {}),
      ...(o.nativeSessionPath ? { nativeSessionPath: o.nativeSessionPath } : {}),
      proofAgeMs: o.proofAgeMs ?? null,
      proofs: o.proofs ?? null,
      settledAt: unresolved ? null : now,
    })
    .where(eq(deliveryReceipts.id, id));
}

/** Settles the receipt only while it is unresolved; false when another path settled it first. */
export async function settleIfUnresolved(tx: Tx, id: string, o: DeliveryOutcome, now: Date): Promise<boolean> {
  const rows = await tx
    .update(deliveryReceipts)
    .set({ state: o.state, reason: o.reason ?? null, detail: o.detail ?? null, settledAt: now })
    .where(and(eq(deliveryReceipts.id, id), inArray(deliveryReceipts.state, [...UNRESOLVED_STATES])))
    .returning({ id: deliveryReceipts.id });
  return rows.length > 0;
}

export async function findDelivery(db: Db, id: string): Promise<DeliveryReceipt | undefined> {
  const [row] = await db.select().from(deliveryReceipts).where(eq(deliveryReceipts.id, id));
  return row;
}

/**
 * The delivery a harness's own id names, in one conversation (rule 30): the receipt's native
 * message or receipt id, or the delivery id itself (Codex's clientUserMessageId is the delivery
 * id). A UUID is compared in its canonical case.
 */
export async function deliveryIdByNativeId(
  db: Db,
  conversationId: string,
  nativeId: string,
): Promise<string | undefined> {
  const id = canonicalUuid(nativeId) ?? nativeId;
  const [row] = await db
    .select({ id: deliveryReceipts.id })
    .from(deliveryReceipts)
    .where(
      and(
        eq(deliveryReceipts.conversationId, conversationId),
        or(
          eq(deliveryReceipts.id, id),
          eq(deliveryReceipts.nativeMessageId, nativeId),
          eq(deliveryReceipts.nativeReceiptId, nativeId),
        ),
      ),
    )
    .limit(1);
  return row?.id;
}

export async function listDeliveries(
  db: Db,
  opts: { limit: number; unresolvedOnly: boolean },
): Promise<DeliveryReceipt[]> {
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
    .where(
      and(
        eq(deliveryReceipts.seatId, seatIdValue),
        eq(deliveryReceipts.conversationId, conversationId),
        inArray(deliveryReceipts.state, [...UNRESOLVED_STATES]),
      ),
    );
}
