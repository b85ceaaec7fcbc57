/**
 * The settle paths for an unresolved delivery (ADR 0207, VUH-2358 and VUH-1779). None of
 * them ever resends: the lead's not-delivered, the unattended release and the owner's
 * abandoned-unknown all keep the original as abandoned-unknown evidence; an original
 * found in the recipient's session is recorded as delivered instead.
 */
import { settlements, type DeliveryReceipt } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { CallState, settleCall } from "./call-receipts.js";
import { settleDelivery, settleIfUnresolved } from "./delivery-receipts.js";
import { resolveFence } from "./fences.js";

export type SettledBy = "lead" | "owner" | "unattended" | "reconcile";

export interface AbandonInput {
  delivery: DeliveryReceipt;
  settledBy: SettledBy;
  conversationId: string | null;
  evidence: Record<string, unknown>;
  now: Date;
}

/** Records the original as abandoned-unknown; its id and content stay refused. */
export async function abandonDelivery(db: Db, a: AbandonInput): Promise<Record<string, unknown>> {
  const detail =
    a.settledBy === "lead"
      ? "settled by the lead as not delivered; the original is kept as abandoned-unknown evidence and is never resent"
      : a.settledBy === "owner"
        ? "settled by the owner as abandoned-unknown; the original is kept as evidence, its id stays refused, and it is never resent"
        : "released unattended: the recipient was idle and its session, read in full, did not hold the original; kept as abandoned-unknown evidence, never resent";
  const body = {
    schemaVersion: 1,
    outcome: "undelivered",
    deliveryStage: "unavailable",
    state: ReceiptState.AbandonedUnknown,
    deliveryId: a.delivery.id,
    seat: a.delivery.seatId,
    detail,
  };
  await db.transaction(async (tx) => {
    await settleDelivery(tx, a.delivery.id, { state: ReceiptState.AbandonedUnknown, reason: `${a.settledBy}_settled`, detail }, a.now);
    await tx.insert(settlements).values({
      deliveryId: a.delivery.id,
      disposition: ReceiptState.AbandonedUnknown,
      settledBy: a.settledBy,
      conversationId: a.conversationId,
      evidence: { previousState: a.delivery.state, ...a.evidence },
      at: a.now,
    });
    await settleCall(tx, a.delivery.id, CallState.Settled, body, a.now);
    await resolveFence(tx, a.delivery.id, ReceiptState.AbandonedUnknown, a.now);
  });
  return body;
}

/** Records the original as delivered because the recipient's session holds it (evidence, not a send). */
export async function recordFoundInSession(db: Db, delivery: DeliveryReceipt, nativeReceiptId: string, now: Date, by: "session" | "acknowledgment" = "session"): Promise<Record<string, unknown>> {
  const body = {
    schemaVersion: 1,
    outcome: "delivered",
    deliveryStage: "delivered",
    deliveryId: delivery.id,
    seat: delivery.seatId,
    nativeReceiptId,
    detail:
      by === "session"
        ? "the original is in the recipient's session; recorded as delivered at reconciliation"
        : "the recipient's native channel acknowledged the original's exact id (transport only); recorded as delivered at the settle, never resent",
  };
  await db.transaction(async (tx) => {
    await settleDelivery(tx, delivery.id, { state: ReceiptState.Delivered, reason: by === "session" ? "found_in_session" : "exact_acknowledgment", detail: body.detail, nativeReceiptId }, now);
    await settleCall(tx, delivery.id, CallState.Settled, body, now);
    await resolveFence(tx, delivery.id, ReceiptState.Delivered, now);
  });
  return body;
}

/**
 * Records the original as not sent because its mailbox proves it absent and its agent fenced the id:
 * no write of it can happen any more (rule 30). Undefined when another path settled it first.
 */
export async function recordProvenAbsent(
  db: Db,
  delivery: DeliveryReceipt,
  conversationId: string,
  proof: Record<string, unknown>,
  now: Date,
): Promise<Record<string, unknown> | undefined> {
  const detail =
    "the recipient's mailbox does not hold the original, no write of it was in progress, " +
    "and its agent now refuses to write it: recorded as not sent at reconciliation; nothing was resent";
  const body = {
    schemaVersion: 1,
    outcome: "undelivered",
    deliveryStage: "unavailable",
    state: ReceiptState.NotSent,
    reason: "proven_absent",
    deliveryId: delivery.id,
    seat: delivery.seatId,
    detail,
    proof,
  };
  const settled = await db.transaction(async (tx) => {
    const outcome = { state: ReceiptState.NotSent, reason: "proven_absent", detail };
    if (!(await settleIfUnresolved(tx, delivery.id, outcome, now))) return false;
    await tx.insert(settlements).values({
      deliveryId: delivery.id,
      disposition: ReceiptState.NotSent,
      settledBy: "reconcile",
      conversationId,
      evidence: { previousState: delivery.state, ...proof },
      at: now,
    });
    await settleCall(tx, delivery.id, CallState.Settled, body, now);
    await resolveFence(tx, delivery.id, ReceiptState.NotSent, now);
    return true;
  });
  return settled ? body : undefined;
}
