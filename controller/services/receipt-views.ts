/**
 * The owner's reads of receipts beyond the newest 100: filtered (seat, conversation, state)
 * and paged for the dashboard, and one receipt in full (proofs with their ages at the write,
 * its fence, its settlements).
 */
import { create } from "@bufbuild/protobuf";
import { and, count, desc, eq, inArray, like, type SQL } from "drizzle-orm";
import { ReceiptFenceSchema, ReceiptProofSchema, ReceiptRowSchema, ReceiptSettlementSchema, GetReceiptResponseSchema, type GetReceiptResponse, type ReceiptRow } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { FleetError, ErrorCode, InvalidArgumentError } from "../../shared/errors.js";
import { UNRESOLVED_STATES } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { deliveryReceipts, fences, settlements } from "../db/schema.js";

type DeliveryRow = typeof deliveryReceipts.$inferSelect;

export function receiptRow(r: DeliveryRow, now: number): ReceiptRow {
  return create(ReceiptRowSchema, {
    deliveryId: r.id,
    seatId: r.seatId,
    conversationId: r.conversationId,
    state: r.state,
    detail: r.detail ?? "",
    ageMs: BigInt(Math.max(0, now - r.createdAt.getTime())),
    proofAgeMs: r.proofAgeMs ?? 0,
    nativeReceiptId: r.nativeReceiptId ?? "",
    nativeMessageId: r.nativeMessageId ?? "",
    nativeSessionPath: r.nativeSessionPath ?? "",
    // uint64: an owner may settle a receipt days later (rule 24 keeps fences 7 days).
    latencyMs: BigInt(r.settledAt ? Math.max(0, r.settledAt.getTime() - r.createdAt.getTime()) : 0),
    createdAtUnixMs: BigInt(r.createdAt.getTime()),
  });
}

export interface ReceiptQuery {
  limit: number;
  offset: number;
  unresolvedOnly: boolean;
  seatId: string;
  conversationId: string;
  state: string;
  /** The dashboard's id search: receipts whose id begins with this. */
  deliveryIdPrefix?: string | undefined;
}

/** Shorter prefixes match too much of the journal to be a search by id. */
export const ID_PREFIX_MIN = 4;

export async function queryReceipts(db: Db, q: ReceiptQuery, now: number): Promise<{ receipts: ReceiptRow[]; total: number }> {
  const where: SQL[] = [];
  if (q.unresolvedOnly) where.push(inArray(deliveryReceipts.state, [...UNRESOLVED_STATES]));
  if (q.seatId) where.push(eq(deliveryReceipts.seatId, q.seatId));
  if (q.conversationId) where.push(eq(deliveryReceipts.conversationId, q.conversationId));
  if (q.state) where.push(eq(deliveryReceipts.state, q.state));
  const prefix = q.deliveryIdPrefix?.trim().toLowerCase();
  if (prefix) {
    if (prefix.length < ID_PREFIX_MIN) {
      const got = JSON.stringify(prefix);
      throw new InvalidArgumentError(`an id search needs at least ${ID_PREFIX_MIN} characters, got ${got}`);
    }
    // LIKE's own wildcards in the text are matched literally.
    where.push(like(deliveryReceipts.id, `${prefix.replace(/[\\%_]/g, "\\$&")}%`));
  }
  const filter = where.length ? and(...where) : undefined;
  const [rows, [total]] = await Promise.all([
    db.select().from(deliveryReceipts).where(filter).orderBy(desc(deliveryReceipts.createdAt)).limit(Math.min(q.limit || 100, 1000)).offset(q.offset),
    db.select({ n: count() }).from(deliveryReceipts).where(filter),
  ]);
  return { receipts: rows.map((r) => receiptRow(r, now)), total: total?.n ?? 0 };
}

export async function receiptDetail(db: Db, deliveryId: string, now: number): Promise<GetReceiptResponse> {
  const [row] = await db.select().from(deliveryReceipts).where(eq(deliveryReceipts.id, deliveryId));
  if (!row) throw new FleetError(ErrorCode.NotFound, `no receipt ${deliveryId}`);
  const [fence] = await db.select().from(fences).where(eq(fences.deliveryId, deliveryId));
  const settled = await db.select().from(settlements).where(eq(settlements.deliveryId, deliveryId)).orderBy(settlements.at);
  return create(GetReceiptResponseSchema, {
    receipt: receiptRow(row, now),
    reason: row.reason ?? "",
    proofs: (row.proofs ?? []).map((p) => create(ReceiptProofSchema, { kind: p.kind, outcome: p.outcome, detail: p.detail, ageAtWriteMs: Math.max(0, Math.round(p.ageAtWriteMs ?? 0)) })),
    fence: create(ReceiptFenceSchema, fence
      ? {
          present: true,
          open: fence.resolvedAt === null,
          openedAgeMs: BigInt(Math.max(0, now - fence.openedAt.getTime())),
          disposition: fence.disposition ?? "",
          noticeAttempts: fence.noticeAttempts,
          noticeAcknowledged: fence.noticeAcknowledgedAt !== null,
        }
      : { present: false }),
    settlements: settled.map((s) =>
      create(ReceiptSettlementSchema, { disposition: s.disposition, settledBy: s.settledBy, ageMs: BigInt(Math.max(0, now - s.at.getTime())), evidenceJson: JSON.stringify(s.evidence) }),
    ),
  });
}
