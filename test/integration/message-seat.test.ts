/**
 * The lead's path end to end inside one process, on each database driver: MCP → controller
 * (receipt) → one gRPC call → node agent → mailbox seat → settled receipt.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";

const META = "clankie/seat-call";

describe.each(DRIVERS)("message_seat on %s", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let owner: ReturnType<typeof ownerOf>;
  let mailbox: MailboxStore;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    mailbox = new MailboxStore(join(fleet.agentStateDir, "mailboxes"));
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
  });

  it("delivers into the mailbox, settles the receipt and returns _meta clankie/seat-call", async () => {
    const res = await lead.call("message_seat", { seat: "inbox", message: "hello worker" });
    expect(res.isError).toBeFalsy();
    const body = res.structuredContent!;
    expect(body).toMatchObject({
      schemaVersion: 1,
      outcome: "delivered",
      seat: "testbox/inbox",
      deliveryStage: "delivered",
    });
    const id = body.deliveryId as string;
    expect(res._meta?.[META]).toEqual({ id, tool: "message_seat", state: "settled", deliveryId: id });
    const entries = mailbox.list("inbox").entries;
    expect(entries.find((e) => e.deliveryId === id)?.text).toBe("hello worker");
    const receipt = (await owner.receipts()).find((r) => r.deliveryId === id);
    expect(receipt).toMatchObject({ state: "delivered", seatId: "testbox/inbox", conversationId: "global-default" });
  });

  it("the result and the receipt carry every proof with its age at the write; the authority's transit bound is the link's measured round trip", async () => {
    const res = await lead.call("message_seat", { seat: "inbox", message: "with evidence" });
    const body = res.structuredContent as {
      proofAgeMs: number;
      proofs: { kind: string; outcome: string; detail: string; ageAtWriteMs: number }[];
      deliveryId: string;
    };
    const authority = body.proofs.find((p) => p.kind === "controller_authority");
    expect(authority).toMatchObject({
      outcome: "proven",
      detail: expect.stringContaining("the link's worst recent round trip"),
    });
    expect(body.proofs.every((p) => p.outcome === "proven" && p.ageAtWriteMs <= body.proofAgeMs)).toBe(true);
    expect(body.proofAgeMs).toBeLessThanOrEqual(250);
    const receipt = (await owner.receipts()).find((r) => r.deliveryId === body.deliveryId);
    expect(receipt?.proofAgeMs).toBe(body.proofAgeMs);
  });

  it("uses the caller's deliveryId from _meta, and a repeat returns the original without a second write", async () => {
    const id = randomUUID();
    const first = await lead.call(
      "message_seat",
      { seat: "inbox", message: "once only" },
      { [META]: { deliveryId: id } },
    );
    expect(first.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    const again = await lead.call(
      "message_seat",
      { seat: "inbox", message: "once only" },
      { [META]: { deliveryId: id } },
    );
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(mailbox.list("inbox").entries.filter((e) => e.deliveryId === id)).toHaveLength(1);
  });

  it("refuses a repeated id with different arguments and dispatches nothing", async () => {
    const id = randomUUID();
    await lead.call("message_seat", { seat: "inbox", message: "first text" }, { [META]: { deliveryId: id } });
    const before = mailbox.list("inbox").entries.length;
    const res = await lead.call(
      "message_seat",
      { seat: "inbox", message: "other text" },
      { [META]: { deliveryId: id } },
    );
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ outcome: "refused", reason: "receipt_conflict" });
    expect(mailbox.list("inbox").entries.length).toBe(before);
  });

  it("reconcile_seat_call returns the original result in its own conversation only", async () => {
    const sent = await lead.call("message_seat", { seat: "inbox", message: "reconcile me" });
    const id = sent.structuredContent!.deliveryId as string;
    const rec = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toEqual(sent.structuredContent);
    expect(rec._meta?.[META]).toMatchObject({ id, state: "settled" });

    const otherToken = (await owner.owner.issueLeadToken({ conversationId: "other-lead" })).token;
    const other = await connectLead(fleet.controller.mcpUrl, otherToken);
    try {
      const foreign = await other.call("reconcile_seat_call", { deliveryId: id });
      expect(foreign.structuredContent).toMatchObject({ outcome: "no_matching_receipt" });
      // Rule 7, issue 32 item 7: refused, in the words of an unknown id; nothing says it exists elsewhere.
      const reuse = await other.call(
        "message_seat",
        { seat: "inbox", message: "reconcile me" },
        { [META]: { deliveryId: id } },
      );
      expect(reuse.structuredContent).toMatchObject({ outcome: "refused", reason: "no_matching_receipt" });
      expect(reuse._meta?.[META]).toBeUndefined();
      expect(JSON.stringify(reuse.structuredContent)).not.toMatch(/another conversation|conflict/);
    } finally {
      await other.close();
    }
  });

  it("invalid arguments are a tool error naming the field, and nothing is written", async () => {
    const before = (await owner.receipts()).length;
    const entriesBefore = mailbox.list("inbox").entries.length;
    const missing = await lead.call("message_seat", { seat: "inbox" });
    expect(missing.isError).toBe(true);
    expect(JSON.stringify(missing.content)).toMatch(/message/);
    const wrongType = await lead.call("message_seat", { seat: "inbox", message: "x", delivery: "shout" });
    expect(wrongType.isError).toBe(true);
    expect(JSON.stringify(wrongType.content)).toMatch(/delivery/);
    const extra = await lead.call("message_seat", { seat: "inbox", message: "x", urgent: true });
    expect(extra.isError).toBe(true);
    expect(JSON.stringify(extra.content)).toMatch(/urgent/);
    const badId = await lead.call(
      "message_seat",
      { seat: "inbox", message: "x" },
      { [META]: { deliveryId: "not-a-uuid" } },
    );
    expect(badId.isError).toBe(true);
    expect(badId.structuredContent).toMatchObject({ outcome: "invalid_argument" });
    expect(JSON.stringify(badId.structuredContent)).toMatch(/deliveryId/);
    expect((await owner.receipts()).length).toBe(before);
    expect(mailbox.list("inbox").entries.length).toBe(entriesBefore);
  });

  it("an unknown seat answers unknown_seat and sends nothing", async () => {
    const res = await lead.call("message_seat", { seat: "nobody", message: "anyone?" });
    expect(res.structuredContent).toMatchObject({ outcome: "unknown_seat", reason: "unknown_seat" });
    expect(res._meta?.[META]).toMatchObject({ state: "settled" });
  });

  it("an explicit delivery mode the mailbox does not offer is rejected before any write", async () => {
    const before = mailbox.list("inbox").entries.length;
    const res = await lead.call("message_seat", { seat: "inbox", message: "steer this", delivery: "steer" });
    expect(res.structuredContent).toMatchObject({
      outcome: "undelivered",
      deliveryStage: "rejected",
      reason: "delivery_mode_unsupported",
    });
    expect(mailbox.list("inbox").entries.length).toBe(before);
  });

  it("stop_task is refused before anything is sent to a seat that advertises no interrupt", async () => {
    const res = await lead.call("stop_task", { seat: "inbox" });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ outcome: "unsupported", seat: "testbox/inbox" });
    expect((await lead.call("stop_task", { seat: "nobody" })).structuredContent).toMatchObject({
      outcome: "unknown_seat",
    });
  });

  it("list_seats shows the mailbox seat with plain-Send capabilities", async () => {
    const res = await lead.call("list_seats", {});
    const seats = res.structuredContent!.seats as Record<string, unknown>[];
    expect(seats).toContainEqual(
      expect.objectContaining({
        id: "testbox/inbox",
        kind: "mailbox",
        online: true,
        inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false },
      }),
    );
  });

  it("a wrong or missing token gets 401 and nothing is written", async () => {
    const before = (await owner.receipts()).length;
    for (const headers of [{}, { authorization: "Bearer wrong" }] as Record<string, string>[]) {
      const res = await fetch(fleet.controller.mcpUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "message_seat", arguments: { seat: "inbox", message: "sneaky" } },
        }),
      });
      expect(res.status).toBe(401);
    }
    expect((await owner.receipts()).length).toBe(before);
    expect(mailbox.list("inbox").entries.some((e) => e.text === "sneaky")).toBe(false);
  });

  it("an agent that cannot be reached before sending is a definite not-sent (seat_offline)", async () => {
    await fleet.agent.close();
    // Let the controller's connection see the socket go, as it would for an agent that died earlier.
    await new Promise((r) => setTimeout(r, 300));
    try {
      const res = await lead.call("message_seat", { seat: "inbox", message: "while the agent is down" });
      expect(res.structuredContent).toMatchObject({ outcome: "seat_offline", reason: "agent_unreachable" });
      expect(res._meta?.[META]).toMatchObject({ state: "settled" });
      const id = res.structuredContent!.deliveryId as string;
      expect((await owner.receipts()).find((r) => r.deliveryId === id)?.state).toBe("not_sent");
    } finally {
      await fleet.restartAgent();
    }
    const after = await lead.call("message_seat", { seat: "inbox", message: "agent is back" });
    expect(after.structuredContent).toMatchObject({ outcome: "delivered" });
  });
});
