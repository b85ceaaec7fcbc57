/**
 * Issue 32 item 4, "one id, one delivery": a UUID is case-insensitive on input (RFC 9562), so
 * the same deliveryId in upper and in lower case is one delivery — one receipt, one mailbox
 * file — and the second call gets the original answer, whether the lead calls over MCP (HTTP)
 * or through its stdio bridge (`clankie mcp`). Ids are canonical (lower case) at the edge.
 */
import { randomUUID } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { CLI, assertBuilt } from "../kit/cli.js";

const META = "clankie/seat-call";
const driver = process.env.DATABASE_URL ? "postgres" : "pglite";
type Result = CallToolResult & { structuredContent?: Record<string, unknown> };

describe(`issue 32 item 4: one id, one delivery (${driver})`, () => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let bridge: Client;
  let owner: ReturnType<typeof ownerOf>;

  /** Mailbox files of `id` in any case: on a case-insensitive file system two of them would be one file. */
  const filesOf = (id: string) =>
    readdirSync(join(fleet.agentStateDir, "mailboxes", "inbox")).filter((f) => f.toLowerCase() === `${id}.json`);
  const receiptsOf = async (id: string) => (await owner.receipts()).filter((r) => r.deliveryId.toLowerCase() === id);
  const viaBridge = async (name: string, args: Record<string, unknown>, meta: Record<string, unknown>) =>
    (await bridge.callTool({ name, arguments: args, _meta: meta }, undefined, { timeout: 60_000 })) as Result;

  beforeAll(async () => {
    assertBuilt();
    fleet = await startFleet(driver);
    owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    await owner.addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        "mcp",
        "--url",
        fleet.controller.mcpUrl,
        "--token-file",
        join(fleet.stateDir, "lead.token"),
        "--log-level",
        "error",
      ],
      env: { PATH: process.env.PATH ?? "" },
      stderr: "pipe",
    });
    bridge = new Client({ name: "one-id-lead", version: "0.0.0" });
    await bridge.connect(transport);
  });
  afterAll(async () => {
    await bridge?.close().catch(() => {});
    await lead?.close();
    await fleet?.close();
  });

  it("item 4, MCP over HTTP: the deliveryId in upper then lower case is one receipt, one mailbox file, and the original answer", async () => {
    const id = randomUUID();
    const first = await lead.call(
      "message_seat",
      { seat: "inbox", message: "once, in any case" },
      { [META]: { deliveryId: id.toUpperCase() } },
    );
    expect(first.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect(first._meta?.[META]).toMatchObject({ id, deliveryId: id });
    const again = await lead.call(
      "message_seat",
      { seat: "inbox", message: "once, in any case" },
      { [META]: { deliveryId: id } },
    );
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(filesOf(id)).toEqual([`${id}.json`]);
    expect(await receiptsOf(id)).toHaveLength(1);
    // Reconcile finds it by either spelling.
    const rec = await lead.call("reconcile_seat_call", { deliveryId: id.toUpperCase() });
    expect(rec.structuredContent).toEqual(first.structuredContent);
  });

  it("item 4, the stdio bridge: the deliveryId in upper then lower case is one receipt, one mailbox file, and the original answer", async () => {
    const id = randomUUID();
    const first = await viaBridge(
      "message_seat",
      { seat: "inbox", message: "once through the bridge" },
      { [META]: { deliveryId: id.toUpperCase() } },
    );
    expect(first.structuredContent, JSON.stringify(first)).toMatchObject({ outcome: "delivered", deliveryId: id });
    const again = await viaBridge(
      "message_seat",
      { seat: "inbox", message: "once through the bridge" },
      { [META]: { deliveryId: id } },
    );
    expect(again.structuredContent).toEqual(first.structuredContent);
    // And the other way round: lower case first (over HTTP), then upper case through the bridge.
    const other = randomUUID();
    const lower = await lead.call(
      "message_seat",
      { seat: "inbox", message: "lower first" },
      { [META]: { deliveryId: other } },
    );
    const upper = await viaBridge(
      "message_seat",
      { seat: "inbox", message: "lower first" },
      { [META]: { deliveryId: other.toUpperCase() } },
    );
    expect(upper.structuredContent).toEqual(lower.structuredContent);
    for (const x of [id, other]) {
      expect(filesOf(x)).toEqual([`${x}.json`]);
      expect(await receiptsOf(x)).toHaveLength(1);
    }
  });

  it("item 4: inReplyTo is canonical before the request is fingerprinted, so its case is no other request", async () => {
    const id = randomUUID();
    const ref = randomUUID();
    const first = await lead.call(
      "message_seat",
      { seat: "inbox", message: "a reply", inReplyTo: ref.toUpperCase() },
      { [META]: { deliveryId: id } },
    );
    expect(first.structuredContent).toMatchObject({ outcome: "delivered" });
    const again = await lead.call(
      "message_seat",
      { seat: "inbox", message: "a reply", inReplyTo: ref },
      { [META]: { deliveryId: id } },
    );
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(filesOf(id)).toHaveLength(1);
  });

  it("item 4: the owner's settle takes the id in either case (the CLI's seat-delivery settle ID)", async () => {
    const id = randomUUID();
    await lead.call("message_seat", { seat: "inbox", message: "settled already" }, { [META]: { deliveryId: id } });
    // A settled delivery is refused as settled: the id was found, not "no delivery".
    const err = await owner.owner
      .settleSeatDelivery({
        deliveryId: id.toUpperCase(),
        conversationId: "global-default",
        disposition: "abandoned-unknown",
      })
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(err?.message).toMatch(/already delivered/);
  });
});
