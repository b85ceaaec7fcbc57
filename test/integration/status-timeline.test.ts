/**
 * Issue 37 item 6, the dashboard's reads: ReceiptTimeline buckets a chosen range (counts by
 * outcome group, settled latency's median and maximum) on both drivers, and refuses a range or
 * bucket count it will not compute; ListReceipts' id search matches a prefix, literally.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../controller/db/open.js";
import { deliveryReceipts } from "../../controller/db/schema.js";
import { receiptTimeline } from "../../controller/services/receipt-timeline.js";
import { queryReceipts } from "../../controller/services/receipt-views.js";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import { DRIVERS, prepareStore } from "../kit/test-db.js";

describe.each(DRIVERS)("the dashboard's timeline and id search on %s", (driver) => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let database: Database;
  // A whole minute, so bucket edges are exact.
  const now = Math.floor(Date.now() / 60_000) * 60_000;
  const min = 60_000;
  const receipt = (agoMs: number, state: string, latencyMs?: number, id: string = randomUUID()) => ({
    id,
    conversationId: "timeline",
    seatId: "box/inbox",
    contentFingerprint: randomUUID(),
    mode: "auto",
    state,
    createdAt: new Date(now - agoMs),
    settledAt: latencyMs === undefined ? null : new Date(now - agoMs + latencyMs),
  });

  beforeAll(async () => {
    store = await prepareStore(driver);
    const target = store.databaseUrl ? { url: store.databaseUrl } : { dataDir: join(store.stateDir, "data") };
    database = await openDatabase(target);
    await database.db.insert(deliveryReceipts).values([
      // The last 10 minutes: three delivered (10, 20, 60 ms), one queued (30 ms), one uncertain.
      receipt(1 * min, "delivered", 10),
      receipt(2 * min, "delivered", 20),
      receipt(3 * min, "queued", 30),
      receipt(4 * min, "delivered", 60),
      receipt(5 * min, "uncertain"),
      // 10 to 20 minutes ago: one not_sent (settled in 5 ms), one abandoned-unknown settled after 2 minutes.
      receipt(15 * min, "not_sent", 5),
      receipt(16 * min, "abandoned-unknown", 120_000),
      // Outside an hour: never counted in the hour's range.
      receipt(90 * min, "delivered", 1),
      receipt(0, "delivered", 7, "abcd0000-1111-4222-8333-444455556666"),
      receipt(0, "delivered", 7, "abce0000-1111-4222-8333-444455556666"),
    ]);
  });
  afterAll(async () => {
    await database?.close();
    await store?.cleanup();
  });

  it("an hour in six 10-minute buckets: outcome groups, median and maximum latency, oldest first", async () => {
    const t = await receiptTimeline(database.readDb, { rangeSeconds: 3600, buckets: 6 }, now);
    expect(Number(t.bucketMs)).toBe(10 * min);
    expect(Number(t.endUnixMs)).toBe(now);
    expect(t.buckets.map((b) => Number(b.startUnixMs))).toEqual([60, 50, 40, 30, 20, 10].map((m) => now - m * min));
    const last = t.buckets[5]!;
    // The two written at `now` fall in the last bucket too.
    expect([last.delivered, last.unresolved, last.notSent]).toEqual([6, 1, 0]);
    // Settled: 10, 20, 30, 60, 7, 7 ms: the median is 15 ms.
    expect([Number(last.latencyP50Ms), Number(last.latencyMaxMs)]).toEqual([15, 60]);
    const before = t.buckets[4]!;
    expect([before.delivered, before.unresolved, before.notSent]).toEqual([0, 0, 2]);
    expect(Number(before.latencyMaxMs)).toBe(120_000);
    for (const b of t.buckets.slice(0, 4)) {
      expect([b.delivered, b.unresolved, b.notSent, Number(b.latencyP50Ms)]).toEqual([0, 0, 0, 0]);
    }
  });

  it("defaults to an hour in 30 buckets; 24 hours reaches the 90-minute-old receipt", async () => {
    const hour = await receiptTimeline(database.readDb, { rangeSeconds: 0, buckets: 0 }, now);
    expect(hour.buckets).toHaveLength(30);
    expect(Number(hour.bucketMs)).toBe(2 * min);
    const day = await receiptTimeline(database.readDb, { rangeSeconds: 86_400, buckets: 24 }, now);
    expect(day.buckets.reduce((n, b) => n + b.delivered + b.unresolved + b.notSent, 0)).toBe(10);
  });

  it.each([
    ["a range under a minute", { rangeSeconds: 59, buckets: 10 }],
    ["a range over 7 days", { rangeSeconds: 7 * 86_400 + 1, buckets: 10 }],
    ["more than 120 buckets", { rangeSeconds: 3600, buckets: 121 }],
  ])("refuses %s as invalid_argument", async (_what, req) => {
    const e = await receiptTimeline(database.readDb, req, now).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(FleetError);
    expect((e as FleetError).code).toBe(ErrorCode.InvalidArgument);
  });

  it("the id search matches a prefix of at least 4 characters, case-insensitively; % and _ are literal", async () => {
    const q = { limit: 50, offset: 0, unresolvedOnly: false, seatId: "", conversationId: "", state: "" };
    const one = await queryReceipts(database.readDb, { ...q, deliveryIdPrefix: "ABCD" }, now);
    expect(one.receipts.map((r) => r.deliveryId)).toEqual(["abcd0000-1111-4222-8333-444455556666"]);
    expect((await queryReceipts(database.readDb, { ...q, deliveryIdPrefix: "abce0000-1111" }, now)).total).toBe(1);
    // Unescaped, each of these would match both ids.
    expect((await queryReceipts(database.readDb, { ...q, deliveryIdPrefix: "ab%d" }, now)).total).toBe(0);
    expect((await queryReceipts(database.readDb, { ...q, deliveryIdPrefix: "ab__" }, now)).total).toBe(0);
    const short = await queryReceipts(database.readDb, { ...q, deliveryIdPrefix: "abc" }, now).catch((x: unknown) => x);
    expect((short as FleetError).code).toBe(ErrorCode.InvalidArgument);
  });
});
