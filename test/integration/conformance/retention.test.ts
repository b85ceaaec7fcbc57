/**
 * Rule 24 (retention), through the leads' MCP tools with the controller's injected clock:
 * completed (abandoned) fence entries refuse their exact text for 7 days and then let it flow;
 * settlements are kept forever; the lead-message sender binding is first write wins; and while
 * the journal is unreadable nothing reconciles or settles (PostgreSQL behind a TCP relay that
 * takes it down — the embedded PGlite cannot go away alone).
 */
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settlements } from "../../../controller/db/schema.js";
import { DRIVERS } from "../../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../../kit/controller-under-test.js";
import { connectLead } from "../../kit/mcp-client.js";
import { startFleet, type TestFleet } from "../../kit/start-fleet.js";
import { ownerOf } from "../../kit/owner.js";
import { startTcpFaultProxy, type TcpFaultProxy } from "../../fixtures/tcp-fault-proxy.js";

const META = "clankie/seat-call";
const DAY = 24 * 60 * 60 * 1000;

describe.each(DRIVERS)("rule 24: retention on %s", (driver) => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    // A frozen agent turns uncertain through the liveness watcher (3 missed 1 s heartbeats), so a
    // loaded box gets more slack than the kit's 1.5 s deliver timeout gives.
    t = await startControllerUnderTest(driver, { heartbeatIntervalMs: 1000, deliverTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await t?.close();
  });
  const send = (message: string, meta?: Record<string, unknown>) =>
    t.lead.call("message_seat", { seat: "inbox", message }, meta);
  /** Under load the freshness gate may refuse a send (`proof_stale`, definite not-sent): a new call, not a resend. */
  const sendDelivered = async (message: string) => {
    let res = await send(message);
    for (let i = 0; i < 20 && res.structuredContent?.reason === "proof_stale"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await send(message);
    }
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "delivered" });
    return res;
  };

  it("a completed (abandoned) fence refuses its exact text for 7 days, then the text flows; the settlement is kept after that", async () => {
    t.agent.freeze();
    const lost = await send("rule 24 seven days");
    const original = lost.structuredContent!.deliveryId as string;
    await t.agent.restart();
    await t.waitOnline();
    expect(
      (await t.lead.call("reconcile_seat_call", { deliveryId: original, settle: "not_delivered" })).structuredContent,
    ).toMatchObject({ state: "abandoned-unknown" });

    t.advance(7 * DAY - 60 * 60_000);
    expect((await send("rule 24 seven days")).structuredContent).toMatchObject({
      reason: "fenced_by_unresolved_original",
      originalDeliveryId: original,
    });
    t.advance(2 * 60 * 60_000);
    const after = await sendDelivered("rule 24 seven days");
    expect(after.structuredContent!.deliveryId).not.toBe(original);

    // Settlements are kept forever: the original still reconciles as abandoned-unknown, its evidence intact.
    t.advance(365 * DAY);
    expect((await t.lead.call("reconcile_seat_call", { deliveryId: original })).structuredContent).toMatchObject({
      state: "abandoned-unknown",
    });
    const rows = await t.controller.database.db.select().from(settlements).where(eq(settlements.deliveryId, original));
    expect(rows).toEqual([
      expect.objectContaining({
        disposition: "abandoned-unknown",
        settledBy: "lead",
        conversationId: "global-default",
      }),
    ]);
  });

  it("the sender binding is first write wins: another conversation's call with the same id is refused and cannot see or rebind it", async () => {
    const id = randomUUID();
    expect(
      (await send("rule 24 bound to the first sender", { [META]: { deliveryId: id } })).structuredContent,
    ).toMatchObject({ outcome: "delivered", deliveryId: id });
    const token = (await t.owner.owner.issueLeadToken({ conversationId: "second-sender" })).token;
    const other = await connectLead(t.controller.mcpUrl, token);
    try {
      const again = await other.call(
        "message_seat",
        { seat: "inbox", message: "rule 24 bound to the first sender" },
        { [META]: { deliveryId: id } },
      );
      expect(again.isError).toBe(true);
      // Rule 7 (issue 32 item 7): refused, in the words of an unknown id, never saying another conversation holds it.
      expect(again.structuredContent).toMatchObject({ outcome: "refused", reason: "no_matching_receipt" });
      expect(JSON.stringify(again.structuredContent)).not.toMatch(/another conversation/);
      expect((await other.call("reconcile_seat_call", { deliveryId: id })).structuredContent).toMatchObject({
        outcome: "no_matching_receipt",
      });
    } finally {
      await other.close();
    }
    expect((await t.owner.receipts()).find((r) => r.deliveryId === id)).toMatchObject({
      conversationId: "global-default",
      state: "delivered",
    });
    expect((await t.lead.call("reconcile_seat_call", { deliveryId: id })).structuredContent).toMatchObject({
      outcome: "delivered",
      deliveryId: id,
    });
  });
});

describe.runIf(process.env.DATABASE_URL)("rule 24: nothing reconciles while the journal is unreadable", () => {
  let fleet: TestFleet;
  let proxy: TcpFaultProxy;
  beforeAll(async () => {
    const target = new URL(process.env.DATABASE_URL!);
    proxy = await startTcpFaultProxy(target.hostname, Number(target.port || 5432));
    fleet = await startFleet(
      "postgres",
      {},
      {
        databaseUrlVia: (url) => {
          const u = new URL(url);
          u.hostname = "127.0.0.1";
          u.port = String(proxy.port);
          return u.toString();
        },
      },
    );
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
  });
  afterAll(async () => {
    proxy?.up();
    await fleet?.close();
    await proxy?.close();
  });

  it("reconcile and settle answer a typed journal error while it is down, and the receipt is unchanged once it is back", async () => {
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    try {
      const sent = await lead.call("message_seat", { seat: "inbox", message: "rule 24 before the outage" });
      const id = sent.structuredContent!.deliveryId as string;
      proxy.down();
      for (const args of [{ deliveryId: id }, { deliveryId: id, settle: "not_delivered" }]) {
        const r = await lead.call("reconcile_seat_call", args);
        expect(r.isError).toBe(true);
        expect(r.structuredContent).not.toMatchObject({ outcome: "delivered" });
        expect(r.structuredContent).toMatchObject({ reason: "journal_unavailable", dispatched: false });
        expect(String(r.structuredContent!.detail)).toMatch(/nothing was reconciled or settled/);
        expect(String(r.structuredContent!.detail)).not.toMatch(/select|operator_call_receipts/i);
      }
      proxy.up();
      let back = await lead.call("reconcile_seat_call", { deliveryId: id });
      for (let i = 0; i < 20 && back.isError; i++) {
        await new Promise((r) => setTimeout(r, 250));
        back = await lead.call("reconcile_seat_call", { deliveryId: id });
      }
      expect(back.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    } finally {
      await lead.close();
    }
  });
});
