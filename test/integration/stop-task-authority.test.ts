/**
 * stop_task only for the owner, a conversation messaging the seat or the conversation that
 * hired the seat's current occupant (issue 11, part 3; before, any lead could stop any seat). The mailbox seat advertises no interrupt, so a
 * conversation that passes the authority check gets `unsupported` and one that does not
 * gets `not_authorized`; in both cases nothing is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { hireReceipts, seats } from "../../controller/db/schema.js";

describe("stop_task authority", () => {
  let fleet: TestFleet;
  let owner: ReturnType<typeof ownerOf>;
  const leads: LeadClient[] = [];
  const leadFor = async (conversationId: string) => {
    const token = (await owner.owner.issueLeadToken({ conversationId })).token;
    const l = await connectLead(fleet.controller.mcpUrl, token);
    leads.push(l);
    return l;
  };

  beforeAll(async () => {
    fleet = await startFleet("pglite");
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
  });
  afterAll(async () => {
    for (const l of leads) await l.close().catch(() => {});
    await fleet?.close();
  });

  it("a conversation that never messaged the seat is not authorized; nothing is sent", async () => {
    const intruder = await leadFor("intruder");
    const res = await intruder.call("stop_task", { seat: "inbox" });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ outcome: "not_authorized", seat: "testbox/inbox" });
  });

  it("a message that was never sent gives no authority", async () => {
    const lead = await leadFor("unlucky");
    // A seat that does not exist: the receipt is settled as unknown_seat, nothing reached `inbox`.
    await lead.call("message_seat", { seat: "nobody", message: "hello" });
    expect((await lead.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "not_authorized",
    });
  });

  it("a conversation messaging the seat passes the check", async () => {
    const sender = await leadFor("sender");
    expect(
      (await sender.call("message_seat", { seat: "inbox", message: "work on this" })).structuredContent,
    ).toMatchObject({ outcome: "delivered" });
    expect((await sender.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "unsupported",
    });
    // Its authority is its own: the intruder is still refused.
    expect((await leads[0]!.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "not_authorized",
    });
  });

  it("the owner's conversation (the state dir's lead token) passes the check", async () => {
    const own = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    leads.push(own);
    expect((await own.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "unsupported",
    });
  });

  it("the conversation that hired the seat's current occupant passes the check; a hire of an earlier occupant does not", async () => {
    const db = fleet.controller.database.db;
    const [seat] = await db.select().from(seats).where(eq(seats.name, "inbox"));
    const hire = (conversationId: string, occupantId: string) =>
      db.insert(hireReceipts).values({
        id: randomUUID(),
        conversationId,
        fingerprint: "f",
        machine: "testbox",
        harness: "codex",
        state: "spawned",
        seatId: seat!.id,
        occupantId,
      });
    const earlier = await leadFor("hired-earlier-occupant");
    await hire("hired-earlier-occupant", `${seat!.occupantId}-before`);
    expect((await earlier.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "not_authorized",
    });
    const hirer = await leadFor("hirer");
    expect((await hirer.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "not_authorized",
    });
    await hire("hirer", seat!.occupantId);
    expect((await hirer.call("stop_task", { seat: "inbox" })).structuredContent).toMatchObject({
      outcome: "unsupported",
    });
  });
});
