/**
 * Receipt ledgers through the leads' MCP tools on a real controller and node agent:
 * - Robustness (issue 16): `no_matching_receipt` carries no seat-call `_meta` at all, so it
 *   never claims a `settled` receipt that does not exist.
 * - Rule 13: operator call receipts (message_seat ids) and worker inbound receipts
 *   (message_clankie ids) are separate ledgers: an id from one never satisfies a lookup in
 *   the other. (Peer messages are not implemented in this tree; see the issue 16 report.)
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { DRIVERS } from "../../kit/test-db.js";
import { startFleet, type TestFleet } from "../../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../../kit/mcp-client.js";
import { ownerOf } from "../../kit/owner.js";
import { CLI } from "../../kit/cli.js";

const META = "clankie/seat-call";

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

describe.each(DRIVERS)("receipt ledgers on %s", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let intruder: LeadClient;
  let worker: Client;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    intruder = await connectLead(
      fleet.controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "intruder" })).token,
    );
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
    await intruder?.close();
    await fleet?.close();
  });

  const forwardedReport = async (text: string) => {
    const body = (await worker.callTool({ name: "message_clankie", arguments: { text } })).structuredContent as {
      deliveryId: string;
    };
    for (let i = 0; i < 200; i++) {
      const s = await worker.callTool({ name: "message_clankie_status", arguments: { deliveryId: body.deliveryId } });
      if ((s.structuredContent as { deliveryStage: string }).deliveryStage === "forwarded") return body.deliveryId;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the agent never forwarded the report");
  };

  it("no_matching_receipt carries no seat-call _meta: neither for an unknown id nor for another conversation's receipt", async () => {
    const unknown = await lead.call("reconcile_seat_call", { deliveryId: randomUUID() });
    expect(unknown.structuredContent).toMatchObject({ outcome: "no_matching_receipt" });
    expect(unknown._meta?.[META]).toBeUndefined();

    const sent = await admitted(lead, { seat: "inbox", message: "only mine to reconcile" });
    expect(sent._meta?.[META]).toMatchObject({ state: "settled" });
    const foreign = await intruder.call("reconcile_seat_call", {
      deliveryId: sent.structuredContent!.deliveryId as string,
    });
    expect(foreign.structuredContent).toMatchObject({ outcome: "no_matching_receipt" });
    expect(foreign._meta?.[META]).toBeUndefined();
    const foreignSettle = await intruder.call("reconcile_seat_call", {
      deliveryId: sent.structuredContent!.deliveryId as string,
      settle: "not_delivered",
    });
    expect(foreignSettle._meta?.[META]).toBeUndefined();
  });

  it("rule 13: a worker inbound id never satisfies an operator-call lookup, and an operator-call id never satisfies a worker-report lookup", async () => {
    const sent = await admitted(lead, { seat: "inbox", message: "report back please" });
    const callId = sent.structuredContent!.deliveryId as string;
    const reportId = await forwardedReport("done");
    expect(reportId).not.toBe(callId);

    // The report's id in the operator-call ledger: no receipt there.
    expect((await lead.call("reconcile_seat_call", { deliveryId: reportId })).structuredContent).toMatchObject({
      outcome: "no_matching_receipt",
    });
    expect((await lead.call("reconcile_seat_call", { hireId: reportId })).structuredContent).toMatchObject({
      outcome: "no_matching_receipt",
    });
    // Reusing the report's id as a message_seat id opens a new operator receipt; it settles nothing in the report ledger.
    const reused = await admitted(
      lead,
      { seat: "inbox", message: "a new message under the report's id" },
      { [META]: { deliveryId: reportId } },
    );
    expect(reused.structuredContent).toMatchObject({ deliveryId: reportId });
    expect((await lead.call("worker_report_status", { deliveryId: reportId })).structuredContent).toMatchObject({
      state: "pending",
    });

    // The operator call's id in the worker-report ledger: unknown, and acknowledging it is refused.
    expect((await lead.call("worker_report_status", { deliveryId: callId })).structuredContent).toMatchObject({
      state: "unknown",
    });
    expect((await lead.call("acknowledge_worker_reports", { deliveryIds: [callId] })).structuredContent).toMatchObject({
      acknowledged: [],
      refused: [callId],
    });
  });
});
