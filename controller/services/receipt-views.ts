/**
 * The owner's reads of receipts beyond the newest 100: filtered (seat, conversation, state,
 * since) and paged (by offset for the dashboard, by key for `clankie receipts list`), and one
 * receipt in full (proofs with their ages at the write, its fence, its settlements).
 */
import { create } from "@bufbuild/protobuf";
import { and, count, desc, eq, getTableColumns, gte, inArray, like, sql, type SQL } from "drizzle-orm";
import {
  ReceiptFenceSchema,
  ReceiptProofSchema,
  ReceiptRowSchema,
  ReceiptSettlementSchema,
  GetReceiptResponseSchema,
  type GetReceiptResponse,
  type ReceiptRow,
} from "../../shared/gen/clankie/fleet/v1/status_pb.js";
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
  /** 0: no lower bound. */
  sinceUnixMs?: bigint | undefined;
  /** The previous page's nextPageToken; empty for the first page. */
  pageToken?: string | undefined;
  /** The dashboard's id search: receipts whose id begins with this. */
  deliveryIdPrefix?: string | undefined;
}

/** Shorter prefixes match too much of the journal to be a search by id. */
export const ID_PREFIX_MIN = 4;

/**
 * A page token is the last row's key: its creation time as PostgreSQL's own text (microseconds,
 * which a JS Date would round away) and its id. Opaque to callers; a forged one only moves the page.
 */
const encodeToken = (createdAt: string, id: string) =>
  Buffer.from(JSON.stringify([createdAt, id])).toString("base64url");

function decodeToken(token: string): [string, string] {
  try {
    const key: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    const [at, id] = Array.isArray(key) && key.length === 2 ? (key as unknown[]) : [];
    if (typeof at === "string" && typeof id === "string" && !Number.isNaN(Date.parse(at))) return [at, id];
  } catch {
    // Falls through to the typed refusal.
  }
  throw new InvalidArgumentError("the page token is not one this controller issued (take it from next_page_token)");
}

export interface ReceiptPage {
  receipts: ReceiptRow[];
  total: number;
  /** Empty on the last page. */
  nextPageToken: string;
}

export async function queryReceipts(db: Db, q: ReceiptQuery, now: number): Promise<ReceiptPage> {
  if (q.pageToken && q.offset) throw new InvalidArgumentError("page by offset or by page token, not both");
  const where: SQL[] = [];
  if (q.unresolvedOnly) where.push(inArray(deliveryReceipts.state, [...UNRESOLVED_STATES]));
  if (q.seatId) where.push(eq(deliveryReceipts.seatId, q.seatId));
  if (q.conversationId) where.push(eq(deliveryReceipts.conversationId, q.conversationId));
  if (q.state) where.push(eq(deliveryReceipts.state, q.state));
  if (q.sinceUnixMs) where.push(gte(deliveryReceipts.createdAt, new Date(Number(q.sinceUnixMs))));
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
  const limit = Math.min(q.limit || 100, 1000);
  const after = q.pageToken ? decodeToken(q.pageToken) : undefined;
  const key = sql`(${deliveryReceipts.createdAt}, ${deliveryReceipts.id})`;
  const page = after ? and(filter, sql`${key} < (${after[0]}::timestamptz, ${after[1]})`) : filter;
  const [rows, [total]] = await Promise.all([
    db
      .select({ ...getTableColumns(deliveryReceipts), key: sql<string>`${deliveryReceipts.createdAt}::text` })
      .from(deliveryReceipts)
      .where(page)
      .orderBy(desc(deliveryReceipts.createdAt), desc(deliveryReceipts.id))
      // One more than asked tells whether a next page exists.
      .limit(limit + 1)
      .offset(q.offset),
    db.select({ n: count() }).from(deliveryReceipts).where(filter),
  ]);
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const nextPageToken = rows.length > limit && last ? encodeToken(last.key, last.id) : "";
  return { receipts: shown.map((r) => receiptRow(r, now)), total: total?.n ?? 0, nextPageToken };
}

export async function receiptDetail(db: Db, deliveryId: string, now: number): Promise<GetReceiptResponse> {
  const [row] = await db.select().from(deliveryReceipts).where(eq(deliveryReceipts.id, deliveryId));
  if (!row) throw new FleetError(ErrorCode.NotFound, `no receipt ${deliveryId}`);
  const [fence] = await db.select().from(fences).where(eq(fences.deliveryId, deliveryId));
  const settled = await db
    .select()
    .from(settlements)
    .where(eq(settlements.deliveryId, deliveryId))
    .orderBy(settlements.at);
  return create(GetReceiptResponseSchema, {
    receipt: receiptRow(row, now),
    reason: row.reason ?? "",
    proofs: (row.proofs ?? []).map((p) =>
      create(ReceiptProofSchema, {
        kind: p.kind,
        outcome: p.outcome,
        detail: p.detail,
        ageAtWriteMs: Math.max(0, Math.round(p.ageAtWriteMs ?? 0)),
      }),
    ),
    fence: create(
      ReceiptFenceSchema,
      fence
        ? {
            present: true,
            open: fence.resolvedAt === null,
            openedAgeMs: BigInt(Math.max(0, now - fence.openedAt.getTime())),
            disposition: fence.disposition ?? "",
            noticeAttempts: fence.noticeAttempts,
            noticeAcknowledged: fence.noticeAcknowledgedAt !== null,
          }
        : { present: false },
    ),
    settlements: settled.map((s) =>
      create(ReceiptSettlementSchema, {
        disposition: s.disposition,
        settledBy: s.settledBy,
        ageMs: BigInt(Math.max(0, now - s.at.getTime())),
        evidenceJson: JSON.stringify(s.evidence),
      }),
    ),
  });
}
