/**
 * Report routing and the reply acknowledgment (inventory rules 50 and 19), through the
 * public surfaces only: the worker's real stdio MCP server (message_clankie), the real node
 * agent forwarding it, and leads' MCP tools on the real controller.
 * - Rule 50: a seat no conversation messaged reports to `global-default`, tagged unadopted;
 *   a message_seat from another conversation adopts the reports only when the seat's host
 *   admitted it (a refused one does not).
 * - Rule 19: `inReplyTo` acknowledges the original report only when the reply was admitted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { DRIVERS } from "../../kit/test-db.js";
import { startFleet, type TestFleet } from "../../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../../kit/mcp-client.js";
import { ownerOf } from "../../kit/owner.js";
import { CLI } from "../../kit/cli.js";

/**
 * A message_seat that must be admitted for the test's setup. On this shared 2-core box the
 * 250 ms freshness gate can refuse a send under load (`proof_stale`, a definite not-sent):
 * asking again is a new call, never a resend, so it is retried a few times.
 */
async function admitted(c: LeadClient, args: Record<string, unknown>, meta?: Record<string, unknown>) {
  let res = await c.call("message_seat", args, meta);
  for (let i = 0; i < 20 && res.structuredContent?.reason === "proof_stale"; i++) {
    await new Promise((r) => setTimeout(r, 250));
    res = await c.call("message_seat", args, meta);
  }
  expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "delivered" });
  return res;
}

type Report = { deliveryId: string; seat: string; text: string; unadopted: boolean };

describe.each(DRIVERS)("report routing and reply acknowledgment on %s", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let other: LeadClient;
  const workers = new Map<string, Client>();

  beforeAll(async () => {
    fleet = await startFleet(driver);
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    for (const seat of ["orphan", "shared"]) {
      await owner.addMailbox(seat);
      const w = new Client({ name: `worker-${seat}`, version: "0" });
      await w.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [CLI, "mailbox", "mcp", seat, "--agent-state-dir", fleet.agentStateDir],
        }),
      );
      workers.set(seat, w);
    }
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    other = await connectLead(
      fleet.controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "other-conversation" })).token,
    );
  });
  afterAll(async () => {
    for (const w of workers.values()) await w.close();
    await lead?.close();
    await other?.close();
    await fleet?.close();
  });

  /** message_clankie from `seat`, returned once the agent forwarded it to the controller. */
  const report = async (seat: string, text: string) => {
    const w = workers.get(seat)!;
    const body = (await w.callTool({ name: "message_clankie", arguments: { text } })).structuredContent as {
      deliveryStage: string;
      deliveryId: string;
    };
    expect(body.deliveryStage).toBe("stored");
    for (let i = 0; i < 200; i++) {
      const s = await w.callTool({ name: "message_clankie_status", arguments: { deliveryId: body.deliveryId } });
      if ((s.structuredContent as { deliveryStage: string }).deliveryStage === "forwarded") return body.deliveryId;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the agent never forwarded the report");
  };
  const reports = async (c: LeadClient) => (await c.call("worker_reports", {})).structuredContent!.reports as Report[];
  const status = async (c: LeadClient, id: string) =>
    (await c.call("worker_report_status", { deliveryId: id })).structuredContent!.state;

  it("rule 50: a report from a seat no conversation messaged goes to global-default tagged unadopted, and to no other conversation", async () => {
    const id = await report("orphan", "nobody hired me");
    expect(await reports(other)).toEqual([]);
    expect(await reports(lead)).toContainEqual(
      expect.objectContaining({ deliveryId: id, seat: "testbox/orphan", unadopted: true }),
    );
  });

  it("rule 50: another conversation's refused message_seat does not adopt the reports; its admitted one does", async () => {
    await admitted(lead, { seat: "shared", message: "report to me" });
    // Explicit steer to a mailbox seat is refused before anything is written (rule 45): not admitted.
    const refused = await other.call("message_seat", {
      seat: "shared",
      message: "report to me instead",
      delivery: "steer",
    });
    expect(refused.structuredContent).toMatchObject({ outcome: "undelivered", deliveryStage: "rejected" });
    const first = await report("shared", "after the refused takeover");
    expect((await reports(other)).map((r) => r.deliveryId)).not.toContain(first);
    expect(await reports(lead)).toContainEqual(expect.objectContaining({ deliveryId: first, unadopted: false }));

    await admitted(other, { seat: "shared", message: "now report to me" });
    const second = await report("shared", "after the admitted takeover");
    expect(await reports(other)).toContainEqual(expect.objectContaining({ deliveryId: second, unadopted: false }));
    expect((await reports(lead)).map((r) => r.deliveryId)).not.toContain(second);
  });

  it("rule 19: inReplyTo acknowledges the report only when the reply was admitted; refused and unsent replies leave it unread", async () => {
    // Route the next report to `lead`: its message is now the latest admitted one at "shared".
    await admitted(lead, { seat: "shared", message: "back to me" });
    const id = await report("shared", "which branch?");
    expect((await reports(lead)).map((r) => r.deliveryId)).toContain(id);
    expect(await status(lead, id)).toBe("delivered");

    const rejected = await lead.call("message_seat", {
      seat: "shared",
      message: "main (as a steer)",
      delivery: "steer",
      inReplyTo: id,
    });
    expect(rejected.structuredContent).toMatchObject({ outcome: "undelivered" });
    expect(await status(lead, id)).toBe("delivered");

    const unknown = await lead.call("message_seat", {
      seat: "no-such-seat",
      message: "main (wrong seat)",
      inReplyTo: id,
    });
    expect(unknown.structuredContent).toMatchObject({ outcome: "unknown_seat" });
    expect(await status(lead, id)).toBe("delivered");

    await admitted(lead, { seat: "shared", message: "main", inReplyTo: id });
    expect(await status(lead, id)).toBe("read");
  });
});
