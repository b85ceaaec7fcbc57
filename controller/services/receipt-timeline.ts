/**
 * Receipts over a chosen time range in equal buckets, for the dashboard's charts (issue 37 item
 * 6): counts by outcome group and the settled latency's median and maximum. One grouped query
 * over the created_at index, so a 24-hour range costs the same few rows as 15 minutes, where
 * the newest 100 receipts the watch carries could not fill a day.
 */
import { create } from "@bufbuild/protobuf";
import { gte, sql } from "drizzle-orm";
import {
  ReceiptTimelineResponseSchema,
  TimelineBucketSchema,
  type ReceiptTimelineResponse,
} from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { ReceiptState, UNRESOLVED_STATES } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { deliveryReceipts } from "../db/schema.js";

export const TIMELINE_RANGE = { defaultSeconds: 3600, minSeconds: 60, maxSeconds: 7 * 86_400 } as const;
export const TIMELINE_BUCKETS = { default: 30, max: 120 } as const;

const DELIVERED = [ReceiptState.Delivered, ReceiptState.Queued, ReceiptState.Steered, ReceiptState.Started];
const NOT_SENT = [ReceiptState.NotSent, ReceiptState.Rejected, ReceiptState.AbandonedUnknown];

export async function receiptTimeline(
  db: Db,
  req: { rangeSeconds: number; buckets: number },
  now: number,
): Promise<ReceiptTimelineResponse> {
  const rangeSeconds = req.rangeSeconds || TIMELINE_RANGE.defaultSeconds;
  const buckets = req.buckets || TIMELINE_BUCKETS.default;
  if (rangeSeconds < TIMELINE_RANGE.minSeconds || rangeSeconds > TIMELINE_RANGE.maxSeconds) {
    const { minSeconds, maxSeconds } = TIMELINE_RANGE;
    throw new InvalidArgumentError(`rangeSeconds must be ${minSeconds} to ${maxSeconds}, got ${rangeSeconds}`);
  }
  if (buckets > TIMELINE_BUCKETS.max) {
    throw new InvalidArgumentError(`buckets must be 1 to ${TIMELINE_BUCKETS.max}, got ${buckets}`);
  }
  const bucketMs = Math.ceil((rangeSeconds * 1000) / buckets);
  const start = now - bucketMs * buckets;
  const c = deliveryReceipts;
  const sinceStartMs = sql`extract(epoch from ${c.createdAt}) * 1000 - ${start}::float8`;
  const index = sql<number>`least(${buckets - 1}, floor((${sinceStartMs}) / ${bucketMs}::float8))::int`;
  const latency = sql`extract(epoch from (${c.settledAt} - ${c.createdAt})) * 1000`;
  const inGroup = (states: readonly string[]) =>
    sql`${c.state} in (${sql.join(
      states.map((s) => sql`${s}`),
      sql`, `,
    )})`;
  const rows = await db
    .select({
      index,
      delivered: sql<number>`(count(*) filter (where ${inGroup(DELIVERED)}))::int`,
      unresolved: sql<number>`(count(*) filter (where ${inGroup(UNRESOLVED_STATES)}))::int`,
      notSent: sql<number>`(count(*) filter (where ${inGroup(NOT_SENT)}))::int`,
      p50: sql<number | null>`percentile_cont(0.5) within group (order by ${latency})
        filter (where ${c.settledAt} is not null)`,
      max: sql<number | null>`max(${latency}) filter (where ${c.settledAt} is not null)`,
    })
    .from(c)
    .where(gte(c.createdAt, new Date(start)))
    // Positional, as the index expression carries parameters (scrape-sources.ts does the same).
    .groupBy(sql`1`);
  const byIndex = new Map(rows.map((r) => [Number(r.index), r]));
  return create(ReceiptTimelineResponseSchema, {
    bucketMs: BigInt(bucketMs),
    endUnixMs: BigInt(now),
    buckets: Array.from({ length: buckets }, (_, i) => {
      const r = byIndex.get(i);
      return create(TimelineBucketSchema, {
        startUnixMs: BigInt(start + i * bucketMs),
        delivered: r?.delivered ?? 0,
        unresolved: r?.unresolved ?? 0,
        notSent: r?.notSent ?? 0,
        latencyP50Ms: BigInt(Math.round(Number(r?.p50 ?? 0))),
        latencyMaxMs: BigInt(Math.round(Number(r?.max ?? 0))),
      });
    }),
  });
}
