/**
 * Rule 30 (issue 35 item 2): reconcile_seat_call accepts the harness's own id for a message as
 * well as the original MCP call id, and answers with the original receipt it belongs to, in the
 * caller's own conversation only: another conversation's native id answers like an unknown one.
 * The mailbox's native id is "<seat>#<seq>", what its agent answered for the write.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { deliveryReceipts } from "../../controller/db/schema.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { ownerOf } from "../kit/owner.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";

const META = "clankie/seat-call";

describe.each(DRIVERS)("reconcile by a harness's own id (%s)", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let other: LeadClient;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const { IssueLeadTokenRequestSchema } = await import("../../shared/gen/clankie/fleet/v1/owner_pb.js");
    const { create } = await import("@bufbuild/protobuf");
    const token = (
      await owner.owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: "another-lead" }))
    ).token;
    other = await connectLead(fleet.controller.mcpUrl, token);
  });
  afterAll(async () => {
    await lead?.close();
    await other?.close();
    await fleet?.close();
  });

  it("the mailbox's native id and the delivery id in upper case both find the original; another conversation finds nothing", async () => {
    const deliveryId = randomUUID();
    const sent = await lead.call(
      "message_seat",
      { seat: "inbox", message: "found by its native id" },
      { [META]: { deliveryId } },
    );
    expect(sent.structuredContent).toMatchObject({ outcome: "delivered" });
    const [row] = await fleet.controller.database.db
      .select()
      .from(deliveryReceipts)
      .where(eq(deliveryReceipts.id, deliveryId));
    expect(row?.nativeReceiptId).toMatch(/^inbox#\d+$/);

    const byNative = await lead.call("reconcile_seat_call", { nativeId: row!.nativeReceiptId! });
    expect(byNative.structuredContent).toMatchObject({ outcome: "delivered", deliveryId });
    expect(byNative._meta?.[META]).toMatchObject({ deliveryId, state: "settled" });
    // Codex's clientUserMessageId is the delivery id itself, in whatever case a harness echoes it.
    const byClientId = await lead.call("reconcile_seat_call", { nativeId: deliveryId.toUpperCase() });
    expect(byClientId.structuredContent).toMatchObject({ outcome: "delivered", deliveryId });

    const foreign = await other.call("reconcile_seat_call", { nativeId: row!.nativeReceiptId! });
    const unknown = await other.call("reconcile_seat_call", { nativeId: "inbox#999999" });
    expect(foreign.structuredContent).toMatchObject({ outcome: "no_matching_receipt" });
    expect(foreign.structuredContent).toEqual(unknown.structuredContent);
  });

  it("exactly one of deliveryId, hireId or nativeId; a native id with a control character is refused", async () => {
    const both = await lead.call("reconcile_seat_call", { nativeId: "inbox#1", deliveryId: randomUUID() });
    expect(both.isError).toBe(true);
    expect(JSON.stringify(both.content)).toMatch(/exactly one of deliveryId, hireId or nativeId/);
    const bad = await lead.call("reconcile_seat_call", { nativeId: "inbox\u0000#1" });
    expect(bad.isError).toBe(true);
  });
});
