/**
 * The journal's database going away and coming back, on a real PostgreSQL behind a TCP relay
 * that can take it down (test/fixtures/tcp-fault-proxy.ts): a message never leaves without its
 * receipt (fail closed, a typed error), the controller recovers without a restart, and a
 * database lost between the native write and the settle leaves one copy in the seat, an
 * uncertain answer, and a receipt that reconciliation settles from the session — never a resend.
 * PostgreSQL only: the embedded PGlite lives inside the controller and cannot go away alone.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { startTcpFaultProxy, type TcpFaultProxy } from "../fixtures/tcp-fault-proxy.js";

const META = "clankie/seat-call";

describe.runIf(process.env.DATABASE_URL)("the journal's PostgreSQL going away", () => {
  let fleet: TestFleet;
  let proxy: TcpFaultProxy;
  let lead: LeadClient;
  let mailbox: MailboxStore;
  let owner: ReturnType<typeof ownerOf>;
  const copies = (id: string) => mailbox.list("inbox").entries.filter((e) => e.deliveryId === id).length;

  beforeAll(async () => {
    const target = new URL(process.env.DATABASE_URL!);
    proxy = await startTcpFaultProxy(target.hostname, Number(target.port || 5432));
    fleet = await startFleet("postgres", {}, {
      databaseUrlVia: (url) => {
        const u = new URL(url);
        u.hostname = "127.0.0.1";
        u.port = String(proxy.port);
        return u.toString();
      },
    });
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    mailbox = new MailboxStore(join(fleet.agentStateDir, "mailboxes"));
  });
  afterAll(async () => {
    proxy?.up();
    await lead?.close();
    await fleet?.close();
    await proxy?.close();
  });

  it("database down before a call: a typed journal error, and nothing reaches the seat (fail closed)", async () => {
    proxy.down();
    const id = randomUUID();
    const res = await lead.call("message_seat", { seat: "inbox", message: "while the journal is down" }, { [META]: { deliveryId: id } });
    expect(res.isError).toBe(true);
    expect(JSON.stringify(res.structuredContent ?? res.content)).toMatch(/journal_unavailable|receipt journal could not be/);
    expect(copies(id)).toBe(0);
    expect(mailbox.list("inbox").entries.some((e) => e.text === "while the journal is down")).toBe(false);
  });

  it("the database comes back: the same controller delivers again, once, without a restart", async () => {
    proxy.up();
    let res = await lead.call("message_seat", { seat: "inbox", message: "after the journal is back" });
    // The pool may still be discarding connections the outage killed: one more try is a new call, not a resend.
    for (let i = 0; i < 20 && res.isError; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await lead.call("message_seat", { seat: "inbox", message: `after the journal is back ${i}` });
    }
    expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(copies(res.structuredContent!.deliveryId as string)).toBe(1);
  });

  it("database lost after the receipt and before the agent call: a definite not-sent, recorded once the journal is back, and the text is not left fenced", async () => {
    const id = randomUUID();
    const text = "lost before the agent call";
    const wentDown = proxy.downWhenClientSends('insert into "seat_turns"');
    const res = await lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    await wentDown;
    expect(res.structuredContent).toMatchObject({ outcome: "undelivered", reason: "journal_unavailable", deliveryId: id });
    // The lead reads why in its own words, never the journal's SQL.
    expect(JSON.stringify(res.structuredContent)).not.toMatch(/insert into|seat_turns/i);
    expect(copies(id)).toBe(0);

    proxy.up();
    // The controller records the not-sent outcome by itself: the receipt settles, and its id answers it.
    let receipt = (await owner.receipts()).find((r) => r.deliveryId === id);
    for (let i = 0; i < 50 && receipt?.state !== "not_sent"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    }
    expect(receipt?.state).toBe("not_sent");
    const again = await lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    expect(again.structuredContent).toMatchObject({ outcome: "undelivered", reason: "journal_unavailable" });
    expect(copies(id)).toBe(0);
    // The same text under a new id goes out: nothing unresolved fences it.
    const fresh = await lead.call("message_seat", { seat: "inbox", message: text });
    expect(fresh.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(copies(fresh.structuredContent!.deliveryId as string)).toBe(1);
  });

  it("database lost after the native write and before the settle: uncertain, one copy, never resent; reconcile settles it from the session", async () => {
    const id = randomUUID();
    const wentDown = proxy.downWhenClientSends('update "delivery_receipts"');
    const res = await lead.call("message_seat", { seat: "inbox", message: "lost between write and settle" }, { [META]: { deliveryId: id } });
    await wentDown;
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: id, reconcileTool: "reconcile_seat_call" });
    expect(copies(id)).toBe(1);

    proxy.up();
    let again = await lead.call("message_seat", { seat: "inbox", message: "lost between write and settle" }, { [META]: { deliveryId: id } });
    for (let i = 0; i < 20 && JSON.stringify(again.structuredContent ?? again.content).includes("journal"); i++) {
      await new Promise((r) => setTimeout(r, 250));
      again = await lead.call("message_seat", { seat: "inbox", message: "lost between write and settle" }, { [META]: { deliveryId: id } });
    }
    // The same id again is never a second dispatch.
    expect(again.isError).toBe(true);
    expect(copies(id)).toBe(1);

    // The controller knew the agent's answer and records it once the journal is back.
    let receipt = (await owner.receipts()).find((r) => r.deliveryId === id);
    for (let i = 0; i < 50 && receipt?.state !== "delivered"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    }
    expect(receipt?.state).toBe("delivered");
    const reconciled = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(reconciled.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect(copies(id)).toBe(1);
  });
});
