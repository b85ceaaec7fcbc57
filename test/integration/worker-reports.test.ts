/**
 * Worker reports end to end on each driver (inventory rules 48, 50, 51, 19): the worker's
 * real stdio MCP server stores message_clankie in the outbox, the node agent forwards it,
 * the conversation that messaged the seat reads and acknowledges it, and read reports age
 * out after 24 hours while unread ones stay.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { CLI } from "../kit/cli.js";
import { purgeReadReports } from "../../controller/reports/worker-reports.js";

describe.each(DRIVERS)("worker reports on %s", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let worker: Client;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    worker = new Client({ name: "worker", version: "0" });
    await worker.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mailbox", "mcp", "inbox", "--agent-state-dir", fleet.agentStateDir],
      }),
    );
  });
  afterAll(async () => {
    await worker?.close();
    await lead?.close();
    await fleet?.close();
  });

  const report = async (text: string) => {
    const res = await worker.callTool({ name: "message_clankie", arguments: { text } });
    const body = res.structuredContent as { deliveryStage: string; deliveryId: string };
    expect(body.deliveryStage).toBe("stored");
    for (let i = 0; i < 100; i++) {
      const s = await worker.callTool({ name: "message_clankie_status", arguments: { deliveryId: body.deliveryId } });
      if ((s.structuredContent as { deliveryStage: string }).deliveryStage === "forwarded") return body.deliveryId;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the agent never forwarded the report");
  };
  const reports = async (c: LeadClient) =>
    (await c.call("worker_reports", {})).structuredContent!.reports as {
      deliveryId: string;
      seat: string;
      text: string;
      unadopted: boolean;
    }[];
  const status = async (id: string) =>
    (await lead.call("worker_report_status", { deliveryId: id })).structuredContent!.state;

  it("a report reaches the conversation that messaged the seat, and only that one", async () => {
    await lead.call("message_seat", { seat: "inbox", message: "please report back" });
    const id = await report("tests pass");
    expect(await reports(lead)).toContainEqual({
      deliveryId: id,
      seat: "testbox/inbox",
      text: "tests pass",
      createdAt: expect.any(String),
      unadopted: false,
    });
    const otherToken = (
      await ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.issueLeadToken({
        conversationId: "bystander",
      })
    ).token;
    const other = await connectLead(fleet.controller.mcpUrl, otherToken);
    try {
      expect(await reports(other)).toEqual([]);
      expect((await other.call("acknowledge_worker_reports", { deliveryIds: [id] })).structuredContent).toMatchObject({
        acknowledged: [],
        refused: [id],
      });
    } finally {
      await other.close();
    }
    expect((await lead.call("acknowledge_worker_reports", { deliveryIds: [id] })).structuredContent).toMatchObject({
      acknowledged: [id],
    });
    expect(await status(id)).toBe("read");
  });

  it("a reply with inReplyTo acknowledges that exact report", async () => {
    const id = await report("which branch?");
    await reports(lead);
    await lead.call("message_seat", { seat: "inbox", message: "main", inReplyTo: id });
    expect(await status(id)).toBe("read");
  });

  it("read reports age out 24 hours after they were read and then read unknown, never not_sent; unread ones stay", async () => {
    const read = await report("read me");
    await reports(lead);
    await lead.call("acknowledge_worker_reports", { deliveryIds: [read] });
    const unread = await report("nobody read me yet");
    await purgeReadReports(fleet.controller.database.db, new Date(Date.now() + 25 * 60 * 60 * 1000));
    expect(await status(read)).toBe("unknown");
    expect(await status(unread)).toBe("pending");
    expect((await reports(lead)).map((r) => r.deliveryId)).toContain(unread);
  });
});
