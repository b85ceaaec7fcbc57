/**
 * Rule 25: one delivery per seat at a time; a later message waits for the seat's turn and then
 * runs the ordinary checks. Losing the seat or its occupant at that recheck is a definite
 * not-sent (seat_gone / occupant_changed), never uncertain, and nothing reaches the seat.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { callReceipts, seats } from "../../controller/db/schema.js";
import { releaseLease, tryTakeLease } from "../kit/seat-lease.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { until } from "../kit/until.js";

describe.each(DRIVERS)("rule 25: the seat lost at the dispatch recheck is a definite not-sent (%s)", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  const inbox = (name: string) => new MailboxStore(join(fleet.agentStateDir, "mailboxes")).list(name).entries;

  beforeAll(async () => {
    // Longer than any stall of a loaded machine: the test frees the turn itself.
    fleet = await startFleet(driver, { seatTurnWaitMs: 30_000 });
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("first");
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("second");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
  });

  /** Sends to `seat` while another delivery holds its turn, changes the seat meanwhile, then frees the turn. */
  async function whileWaiting(seat: string, change: () => Promise<unknown>) {
    const db = fleet.controller.database.db;
    expect(await tryTakeLease(db, `testbox/${seat}`, "another-delivery", 30_000)).toBe(true);
    const before = (await db.select().from(callReceipts)).length;
    const call = lead.call("message_seat", { seat, message: "waits for its turn" });
    // Admitted (its receipt written) before the seat changes: only the dispatch recheck can see it.
    await until(async () => (await db.select().from(callReceipts)).length > before, "the message admitted");
    await change();
    await releaseLease(db, `testbox/${seat}`, "another-delivery");
    return call;
  }

  it("the occupant replaced while the message waited: occupant_changed, not sent, nothing written", async () => {
    const db = fleet.controller.database.db;
    const r = await whileWaiting("first", () =>
      db.update(seats).set({ occupantId: "a-new-occupant" }).where(eq(seats.id, "testbox/first")),
    );
    expect(r.structuredContent).toMatchObject({ outcome: "undelivered", reason: "occupant_changed" });
    expect(r._meta?.["clankie/seat-call"]).toMatchObject({ state: "settled" });
    expect(inbox("first")).toHaveLength(0);
  });

  it("the seat gone while the message waited: seat_gone, not sent, nothing written", async () => {
    const db = fleet.controller.database.db;
    const r = await whileWaiting("second", () =>
      db.update(seats).set({ present: false }).where(eq(seats.id, "testbox/second")),
    );
    expect(r.structuredContent).toMatchObject({ outcome: "undelivered", reason: "seat_gone" });
    expect(r._meta?.["clankie/seat-call"]).toMatchObject({ state: "settled" });
    expect(inbox("second")).toHaveLength(0);
  });
});
