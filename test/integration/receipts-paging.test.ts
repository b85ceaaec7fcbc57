/**
 * Issue 37 item 2: `clankie receipts list` pages by key (StatusService.ListReceipts page_token).
 * Receipts written in the same millisecond, apart only in microseconds, must each appear exactly
 * once; a new receipt arriving between pages must not shift the next page; since filters; a
 * foreign token or a token with an offset is a typed invalid_argument.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { DRIVERS, openTestDatabase } from "../kit/test-db.js";
import type { Database } from "../../controller/db/open.js";
import { queryReceipts } from "../../controller/services/receipt-views.js";
import { FleetError } from "../../shared/errors.js";

describe.each(DRIVERS)("issue 37 item 2: receipts paged by key on %s", (driver) => {
  let database: Database;
  let cleanup: () => Promise<void>;
  const q = { limit: 2, offset: 0, unresolvedOnly: false, seatId: "", conversationId: "", state: "" };
  const insert = (id: string, at: string, seat = "m/s") =>
    database.db.execute(
      sql`insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state, created_at) values (${id}, 'c', ${seat}, 'f', 'send', 'delivered', ${at}::timestamptz)`,
    );

  beforeAll(async () => {
    ({ database, cleanup } = await openTestDatabase(driver));
    // Five in one millisecond (two share the microsecond too), one older.
    await insert("r1", "2026-12-05 10:00:00.123001+00");
    await insert("r2", "2026-12-05 10:00:00.123002+00");
    await insert("r3", "2026-12-05 10:00:00.123003+00");
    await insert("r4", "2026-12-05 10:00:00.123003+00");
    await insert("r5", "2026-12-05 10:00:00.123009+00");
    await insert("old", "2026-12-01 00:00:00+00", "m/other");
  });
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  it("every receipt exactly once, newest first, across pages of two; a receipt written meanwhile does not shift them", async () => {
    const seen: string[] = [];
    let token = "";
    for (let page = 0; page < 10; page++) {
      const res = await queryReceipts(database.db, { ...q, pageToken: token }, Date.now());
      expect(res.total).toBe(page === 0 ? 6 : 7);
      seen.push(...res.receipts.map((r) => r.deliveryId));
      if (page === 0) await insert("new", "2026-12-06 00:00:00+00");
      token = res.nextPageToken;
      if (!token) break;
    }
    expect(seen).toEqual(["r5", "r4", "r3", "r2", "r1", "old"]);
    await database.db.execute(sql`delete from delivery_receipts where id = 'new'`);
  });

  it("since filters by creation time, with the other filters", async () => {
    const since = BigInt(Date.parse("2026-12-04T00:00:00Z"));
    expect(
      (await queryReceipts(database.db, { ...q, limit: 100, sinceUnixMs: since }, Date.now())).receipts.map(
        (r) => r.deliveryId,
      ),
    ).toEqual(["r5", "r4", "r3", "r2", "r1"]);
    expect(
      (await queryReceipts(database.db, { ...q, limit: 100, seatId: "m/other" }, Date.now())).receipts.map(
        (r) => r.deliveryId,
      ),
    ).toEqual(["old"]);
  });

  it("a token this controller did not issue, or a token with an offset, is invalid_argument", async () => {
    const code = (p: Promise<unknown>) =>
      p.then(
        () => "ok",
        (e: unknown) => FleetError.from(e).code,
      );
    expect(await code(queryReceipts(database.db, { ...q, pageToken: "not-a-token" }, Date.now()))).toBe(
      "invalid_argument",
    );
    const first = await queryReceipts(database.db, q, Date.now());
    expect(
      await code(queryReceipts(database.db, { ...q, offset: 2, pageToken: first.nextPageToken }, Date.now())),
    ).toBe("invalid_argument");
  });
});
