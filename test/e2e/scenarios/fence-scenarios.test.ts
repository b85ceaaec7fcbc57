/**
 * Inventory scenarios 9, 10 and 12 end to end (rules 21, 22, 23): a lead's MCP calls on the
 * real controller (with its injectable clock), a real node agent child process that the tests
 * freeze, thaw and kill to lose an answer for real, and a mailbox seat whose files are the
 * recipient's session.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../../kit/controller-under-test.js";

describe.each(DRIVERS)("inventory scenarios 9, 10, 12 on %s", (driver) => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    // A frozen agent turns uncertain through the liveness watcher (3 missed 1 s heartbeats), so a
    // loaded box gets more slack than the kit's 1.5 s deliver timeout gives.
    t = await startControllerUnderTest(driver, { heartbeatIntervalMs: 1000, deliverTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const send = (message: string) => t.lead.call("message_seat", { seat: "inbox", message });
  /**
   * A send the scenario needs delivered. On this shared 2-core box the 250 ms freshness gate can
   * refuse one under load (`proof_stale`, a definite not-sent): asking again is a new call, never a resend.
   */
  const sendDelivered = async (message: string) => {
    let res = await send(message);
    for (let i = 0; i < 20 && res.structuredContent?.reason === "proof_stale"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await send(message);
    }
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "delivered" });
    return res;
  };
  const entries = (text: string) => t.mailbox.list("inbox").entries.filter((e) => e.text === text);
  const state = async (id: string) => (await t.owner.receipts()).find((r) => r.deliveryId === id)?.state;
  const until = async (what: () => boolean, why: string) => {
    for (let i = 0; i < 400 && !what(); i++) await new Promise((r) => setTimeout(r, 25));
    if (!what()) throw new Error(why);
  };

  /** The answer is lost and the message never reached the seat: the agent is frozen, then killed. */
  async function lostOriginal(text: string): Promise<string> {
    t.agent.freeze();
    const res = await send(text);
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain", deliveryStage: "uncertain" });
    await t.agent.restart();
    await t.waitOnline();
    expect(entries(text)).toHaveLength(0);
    return res.structuredContent!.deliveryId as string;
  }

  /** The answer is lost but the seat took the message: the frozen agent is thawed and writes it late. */
  async function lostAnswerDelivered(text: string): Promise<string> {
    t.agent.freeze();
    const res = await send(text);
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain", deliveryStage: "uncertain" });
    t.agent.thaw();
    await until(() => entries(text).length === 1, "the thawed agent never wrote the original");
    await t.waitOnline();
    return res.structuredContent!.deliveryId as string;
  }

  it("scenario 9: idle recipient whose session was read without the original: before 5 min the same text stays fenced while different text flows; after 5 min a different message passes", async () => {
    const original = await lostOriginal("scenario 9 order");
    t.advance(4 * 60_000);
    await sendDelivered("scenario 9: other text at 4 min");
    expect((await send("scenario 9 order")).structuredContent).toMatchObject({
      reason: "fenced_by_unresolved_original",
      originalDeliveryId: original,
      originalState: "uncertain",
    });
    expect(await state(original)).toBe("uncertain");
    t.advance(2 * 60_000);
    const late = await sendDelivered("scenario 9: other text after 5 min");
    expect(late.structuredContent!.previous).toContainEqual({ deliveryId: original, state: "abandoned-unknown" });
    expect(entries("scenario 9 order")).toHaveLength(0);
  });

  it("scenario 9: an unreadable session keeps the original fenced after 5 min: the same text is refused while different text flows", async () => {
    const original = await lostOriginal("scenario 9 unreadable order");
    // One damaged file in the recipient's mailbox: its session can be read only in part.
    const broken = join(t.mailbox.dir("inbox"), "broken.json");
    writeFileSync(broken, "{ not json");
    try {
      t.advance(6 * 60_000);
      const other = await send("scenario 9: other text while the session is unreadable");
      expect(other.structuredContent).toMatchObject({ outcome: "delivered" });
      expect(other.structuredContent!.previous ?? []).not.toContainEqual(
        expect.objectContaining({ deliveryId: original }),
      );
      expect(await state(original)).toBe("uncertain");
      expect((await send("scenario 9 unreadable order")).structuredContent).toMatchObject({
        reason: "fenced_by_unresolved_original",
        originalDeliveryId: original,
        originalState: "uncertain",
      });
    } finally {
      rmSync(broken, { force: true });
    }
    expect(entries("scenario 9 unreadable order")).toHaveLength(0);
  });

  it("scenario 10: lead settle not_delivered with no acknowledgment and no trace in the session: abandoned-unknown, never resent", async () => {
    const original = await lostOriginal("scenario 10 never arrived");
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({
      outcome: "undelivered",
      state: "abandoned-unknown",
      deliveryId: original,
    });
    expect(await state(original)).toBe("abandoned-unknown");
    expect(entries("scenario 10 never arrived")).toHaveLength(0);
  });

  it("scenario 10: lead settle not_delivered when the original is in the recipient's session records delivered, and nothing is resent", async () => {
    const original = await lostAnswerDelivered("scenario 10 did arrive");
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: original });
    expect(await state(original)).toBe("delivered");
    expect(entries("scenario 10 did arrive")).toHaveLength(1);
    expect(
      (await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" })).structuredContent,
    ).toMatchObject({ outcome: "refused", reason: "already_settled" });
  });

  it("scenario 12: a late arrival after the settle: the recipient holds both messages, the settled original stays abandoned-unknown, and nothing errors", async () => {
    t.agent.freeze();
    const res = await send("scenario 12 slow original");
    const original = res.structuredContent!.deliveryId as string;
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain" });
    // Settled while the agent is still frozen: its session cannot be read, so abandoned-unknown.
    const settled = await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" });
    expect(settled.structuredContent).toMatchObject({ state: "abandoned-unknown" });
    t.agent.thaw();
    await until(() => entries("scenario 12 slow original").length === 1, "the late original never arrived");
    await t.waitOnline();
    await sendDelivered("scenario 12 the follow-up");
    expect(entries("scenario 12 the follow-up")).toHaveLength(1);
    expect(entries("scenario 12 slow original")).toHaveLength(1);
    expect(await state(original)).toBe("abandoned-unknown");
    const rec = await t.lead.call("reconcile_seat_call", { deliveryId: original });
    expect(rec.structuredContent).toMatchObject({ state: "abandoned-unknown" });
  });
});
