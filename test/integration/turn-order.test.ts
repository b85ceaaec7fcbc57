/**
 * Rule 25 on each driver, through the real MCP endpoint, controller and agent: deliveries to
 * one seat take their turn in the order the controller admitted them (100 overlapping calls
 * from one lead session land in the mailbox in that order), and a message that waited out the
 * seat's turn budget takes the ordinary checks and goes out instead of being refused seat_busy.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { DRIVERS } from "../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../kit/controller-under-test.js";

const rowsOf = <T>(r: unknown): T[] => (Array.isArray(r) ? r : (r as { rows: T[] }).rows) as T[];

describe.each(DRIVERS)("seat turns through the pipeline on %s", (driver) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  });
  let t: ControllerUnderTest;
  beforeAll(async () => {
    t = await startControllerUnderTest(driver, { deliverTimeoutMs: 5000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("100 overlapping calls from one session land in the order the controller admitted them", async () => {
    const texts = Array.from({ length: 100 }, (_, i) => `overlapping ${i}`);
    const results = await Promise.all(texts.map((message) => t.lead.call("message_seat", { seat: "inbox", message })));
    for (const r of results) expect(r.structuredContent).toMatchObject({ outcome: "delivered" });
    const ids = new Set(results.map((r) => r.structuredContent!.deliveryId as string));
    const admitted = rowsOf<{ id: string }>(
      await t.controller.database.db.execute(sql`select id from delivery_receipts order by created_at, id`),
    )
      .map((r) => r.id)
      .filter((id) => ids.has(id));
    const landed = t.mailbox
      .list("inbox")
      .entries.map((e) => e.deliveryId)
      .filter((id) => ids.has(id));
    expect(landed).toHaveLength(100);
    expect(landed).toEqual(admitted);
  });

  it("after the turn budget a message takes the ordinary checks and is delivered, not refused seat_busy", async () => {
    const t = await startControllerUnderTest(driver, { deliverTimeoutMs: 5000, seatTurnWaitMs: 1000 });
    cleanups.push(() => t.close());
    // Another live controller (its lease renewed for a minute) holds the seat (its delivery is stuck).
    await t.controller.database.db.execute(
      sql`insert into controller_instances (id, pid, host, lease_expires_at) values ('another-controller', 1, 'another-host', now() + interval '60 seconds')`,
    );
    await t.controller.database.db.execute(
      sql`insert into seat_turns (seat_id, holder, expires_at) values ('box/inbox', 'another-controller:stuck', now() + interval '60 seconds') on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at`,
    );
    const res = await t.lead.call("message_seat", { seat: "inbox", message: "after waiting out the turn" });
    expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(res.structuredContent!.reason).not.toBe("seat_busy");
    expect(t.mailbox.list("inbox").entries.filter((e) => e.text === "after waiting out the turn")).toHaveLength(1);
    // The other holder's lease was not taken from it.
    expect(
      rowsOf<{ holder: string }>(
        await t.controller.database.db.execute(sql`select holder from seat_turns where seat_id = 'box/inbox'`),
      )[0]?.holder,
    ).toBe("another-controller:stuck");
  });
});
