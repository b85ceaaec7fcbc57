/**
 * Rule 30: reconciliation proves the original, not an id or a body alone. The recipient's
 * session (a mailbox seat's files, read by the real node agent) is given entries a session
 * could hold: the original's id with other content, and the original's exact text under
 * another id. Neither is the original: reconcile stays uncertain and a lead settle abandons it.
 * And a session read from a later occupant of the seat is not the recipient's session at all:
 * it proves neither presence nor absence (the native occupant is checked, not only the seat).
 */
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { settlements } from "../../../controller/db/schema.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../../kit/controller-under-test.js";

describe.each(DRIVERS)("rule 30: reconcile checks on %s", (driver) => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    // A frozen agent turns uncertain through the liveness watcher (3 missed 1 s heartbeats), so a
    // loaded box gets more slack than the kit's 1.5 s deliver timeout gives.
    t = await startControllerUnderTest(driver, { heartbeatIntervalMs: 1000, deliverTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const state = async (id: string) => (await t.owner.receipts()).find((r) => r.deliveryId === id)?.state;
  async function lostOriginal(text: string): Promise<string> {
    t.agent.freeze();
    const res = await t.lead.call("message_seat", { seat: "inbox", message: text });
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain" });
    await t.agent.restart();
    await t.waitOnline();
    return res.structuredContent!.deliveryId as string;
  }

  it("the original's id with other content in the session is not the original: reconcile stays uncertain, settle abandons it", async () => {
    const original = await lostOriginal("rule 30 the real order");
    await t.mailbox.append("inbox", {
      deliveryId: original,
      text: "rule 30 something else entirely",
      conversationId: "global-default",
    });
    const rec = await t.lead.call("reconcile_seat_call", { deliveryId: original });
    expect(rec.structuredContent).toMatchObject({
      outcome: "uncertain",
      detail: expect.stringContaining("other content"),
    });
    expect(await state(original)).toBe("uncertain");
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({ state: "abandoned-unknown" });
  });

  it("the original's exact text under another id never substitutes for the missing id", async () => {
    const original = await lostOriginal("rule 30 same words");
    await t.mailbox.append("inbox", {
      deliveryId: randomUUID(),
      text: "rule 30 same words",
      conversationId: "global-default",
    });
    const rec = await t.lead.call("reconcile_seat_call", { deliveryId: original });
    expect(rec.structuredContent).toMatchObject({
      outcome: "uncertain",
      detail: expect.stringContaining("does not hold the original"),
    });
    expect(await state(original)).toBe("uncertain");
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({ state: "abandoned-unknown" });
  });

  it("a session read from another occupant than the original's is not the recipient's session: reconcile says unreadable, never absent, and settle records it so", async () => {
    const original = await lostOriginal("rule 30 written to the first occupant");
    // The seat gets a new occupant (as a new session in the same pane would): the agent now reads that occupant's session.
    await t.agent.kill();
    const book = join(t.stateDir, "agent", "seats.json");
    const rows = JSON.parse(readFileSync(book, "utf8")) as { name: string; occupantId: string }[];
    const before = rows.find((r) => r.name === "inbox")!.occupantId;
    for (const r of rows) if (r.name === "inbox") r.occupantId = `${before}:replaced`;
    writeFileSync(book, JSON.stringify(rows));
    await t.agent.restart();
    await t.waitOnline();
    for (
      let i = 0;
      i < 100 &&
      (await t.owner.seats()).find((s) => s.seat?.name === "inbox")?.seat?.occupantId !== `${before}:replaced`;
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    const rec = await t.lead.call("reconcile_seat_call", { deliveryId: original });
    expect(rec.structuredContent).toMatchObject({
      outcome: "uncertain",
      detail: expect.stringContaining("could not be read"),
    });
    expect(rec.structuredContent!.detail).toContain(before);
    expect(await state(original)).toBe("uncertain");
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({ state: "abandoned-unknown" });
    const [row] = await t.controller.database.db.select().from(settlements).where(eq(settlements.deliveryId, original));
    expect(row?.evidence).toMatchObject({ session: "unreadable" });
  });
});
