/**
 * Result retention (rule 12, scenario 19) and shutdown (rule 9, scenario 21) on each
 * database driver.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../kit/test-db.js";
import { startControllerUnderTest, type ControllerUnderTest } from "../kit/controller-under-test.js";
import { startFleet } from "../kit/start-fleet.js";
import { connectLead } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import {
  admitCall,
  CallState,
  expireOldResults,
  RETAINED_RESULT_BODIES,
  settleCall,
} from "../../controller/journal/call-receipts.js";

const META = "clankie/seat-call";

describe.each(DRIVERS)("retention on %s", (driver) => {
  let t: ControllerUnderTest;
  beforeAll(async () => {
    t = await startControllerUnderTest(driver);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("keeps the newest 1,000 settled bodies; older ids answer expired and are never replayed; uncertain originals are never dropped; tombstones keep refusing other arguments", async () => {
    t.agent.freeze();
    const uncertain = await t.lead.call("message_seat", { seat: "inbox", message: "kept forever" });
    expect(uncertain.structuredContent).toMatchObject({ outcome: "uncertain" });
    await t.agent.restart();
    await t.waitOnline();

    // The oldest five go through message_seat; the 1,000 newer settled receipts are written
    // through the same journal functions in one transaction, to keep the suite fast.
    const ids = Array.from({ length: 5 }, () => randomUUID());
    for (const [i, id] of ids.entries())
      await t.lead.call("message_seat", { seat: "nobody", message: `m${i}` }, { [META]: { deliveryId: id } });
    const later = Date.now() + 1000;
    await t.controller.database.db.transaction(async (tx) => {
      for (let i = 0; i < RETAINED_RESULT_BODIES; i++) {
        const id = randomUUID();
        await admitCall(tx, { id, tool: "message_seat", conversationId: "global-default", fingerprint: `filler-${i}` });
        await settleCall(
          tx,
          id,
          CallState.Settled,
          { schemaVersion: 1, outcome: "unknown_seat", deliveryId: id },
          new Date(later + i),
        );
        ids.push(id);
      }
    });
    const expired = await expireOldResults(t.controller.database.db);
    expect(expired).toBeGreaterThanOrEqual(5);

    const oldest = ids[0]!;
    const replay = await t.lead.call(
      "message_seat",
      { seat: "nobody", message: "m0" },
      { [META]: { deliveryId: oldest } },
    );
    expect(replay.structuredContent).toMatchObject({ outcome: "expired", deliveryId: oldest });
    expect((await t.lead.call("reconcile_seat_call", { deliveryId: oldest })).structuredContent).toMatchObject({
      outcome: "expired",
    });
    const otherArgs = await t.lead.call(
      "message_seat",
      { seat: "inbox", message: "something new" },
      { [META]: { deliveryId: oldest } },
    );
    expect(otherArgs.structuredContent).toMatchObject({ outcome: "refused", reason: "receipt_conflict" });
    const newest = ids.at(-1)!;
    expect((await t.lead.call("reconcile_seat_call", { deliveryId: newest })).structuredContent).toMatchObject({
      outcome: "unknown_seat",
      deliveryId: newest,
    });
    const kept = await t.lead.call("reconcile_seat_call", {
      deliveryId: uncertain.structuredContent!.deliveryId as string,
    });
    expect(kept.structuredContent).toMatchObject({ outcome: "uncertain" });
    expect(t.mailbox.list("inbox").entries.some((e) => e.text === "something new")).toBe(false);
  });
});

describe.each(DRIVERS)("shutdown on %s", (driver) => {
  it("a call parked before its agent call answers a definite not-sent when the controller stops (the phase decides, ADR 0003), new calls get a stopping refusal; nothing is sent", async () => {
    const fleet = await startFleet(driver, { fault: "hang_after_admit", shutdownGraceMs: 1500 });
    try {
      await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
      const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
      const pending = lead.call("message_seat", { seat: "inbox", message: "caught by the stop" });
      await new Promise((r) => setTimeout(r, 300));
      const closing = fleet.controller.close();
      await new Promise((r) => setTimeout(r, 200));
      const during = await fetch(fleet.controller.mcpUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${fleet.controller.leadToken}`,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "0" } },
        }),
      });
      expect(during.status).toBe(503);
      expect(await during.text()).toContain("service_stopping");
      const res = await pending;
      // Parked before the Deliver call: nothing can have reached the agent, so it is definite, not uncertain.
      expect(res.structuredContent).toMatchObject({ outcome: "undelivered", reason: "service_stopping" });
      expect(res._meta?.[META]).toMatchObject({ state: "settled" });
      await closing;
      await lead.close().catch(() => {});
      const { entries } = new MailboxStore(join(fleet.agentStateDir, "mailboxes")).list("inbox");
      expect(entries.some((e) => e.text === "caught by the stop")).toBe(false);
    } finally {
      await fleet.close();
    }
  });
});
