/**
 * Notices carry a real authority check (issue 11, part 3; before, every notice said
 * "authority age 0" whatever happened while it waited for the seat's turn). On a real
 * journal: the check passes for a pending fence on a present seat with the planned
 * occupant, and refuses when the fence was resolved or acknowledged meanwhile, the seat
 * left, or its occupant changed.
 */
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryReceipts, fences, seats } from "../../controller/db/schema.js";
import { checkNoticeAuthority } from "../../controller/delivery/notice-authority.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";

describe("notice authority", () => {
  let fleet: TestFleet;
  const seatId = "testbox/inbox";

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
  });
  afterAll(async () => {
    await fleet?.close();
  });

  const pendingFence = async () => {
    const { db } = fleet.controller.database;
    const id = randomUUID();
    await db
      .insert(deliveryReceipts)
      .values({ id, conversationId: "c", seatId, contentFingerprint: `fp-${id}`, mode: "auto", state: "uncertain" });
    await db.insert(fences).values({ deliveryId: id, seatId, contentFingerprint: `fp-${id}`, conversationId: "c" });
    return id;
  };
  const seatRow = async () => (await fleet.controller.database.db.select().from(seats).where(eq(seats.id, seatId)))[0]!;

  it("passes for a pending fence on a present seat with the planned occupant, and dates the check", async () => {
    const id = await pendingFence();
    const seat = await seatRow();
    const before = performance.now();
    const a = await checkNoticeAuthority(fleet.controller.database.db, id, seat);
    expect(a.ok).toBe(true);
    if (a.ok) expect(a.checkedAt).toBeGreaterThanOrEqual(before);
  });

  it("refuses when the occupant changed while the notice waited", async () => {
    const id = await pendingFence();
    const seat = await seatRow();
    const a = await checkNoticeAuthority(fleet.controller.database.db, id, { ...seat, occupantId: "someone-before" });
    expect(a).toMatchObject({ ok: false, why: expect.stringMatching(/occupant changed/) });
  });

  it("refuses when the fence was resolved or acknowledged meanwhile", async () => {
    const { db } = fleet.controller.database;
    const seat = await seatRow();
    const resolved = await pendingFence();
    await db
      .update(fences)
      .set({ resolvedAt: new Date(), disposition: "delivered" })
      .where(eq(fences.deliveryId, resolved));
    expect(await checkNoticeAuthority(db, resolved, seat)).toMatchObject({
      ok: false,
      why: expect.stringMatching(/resolved/),
    });
    const acked = await pendingFence();
    await db.update(fences).set({ noticeAcknowledgedAt: new Date() }).where(eq(fences.deliveryId, acked));
    expect(await checkNoticeAuthority(db, acked, seat)).toMatchObject({
      ok: false,
      why: expect.stringMatching(/acknowledged/),
    });
  });

  it("refuses when the seat is no longer present", async () => {
    const { db } = fleet.controller.database;
    const id = await pendingFence();
    const seat = await seatRow();
    await db.update(seats).set({ present: false }).where(eq(seats.id, seatId));
    try {
      expect(await checkNoticeAuthority(db, id, seat)).toMatchObject({
        ok: false,
        why: expect.stringMatching(/no longer present/),
      });
    } finally {
      await db.update(seats).set({ present: true }).where(eq(seats.id, seatId));
    }
  });
});
