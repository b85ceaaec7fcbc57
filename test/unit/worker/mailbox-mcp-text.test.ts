/**
 * Issue 32 items 4 and 7 on the worker's mailbox MCP server (worker/mailbox-mcp.ts):
 * a report the wire or the journal would change (a lone surrogate, a NUL) is refused as
 * invalid_text before it reaches the outbox, so it can neither arrive altered nor hold the
 * outbox's queue; a report's id is found in either case.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createMailboxMcpServer } from "../../../worker/mailbox-mcp.js";
import { MailboxStore } from "../../../node-agent/mailbox/store.js";
import { Outbox } from "../../../node-agent/mailbox/outbox.js";
import { tempDir } from "../../kit/test-db.js";

async function worker(): Promise<{ client: Client; outbox: Outbox }> {
  const dir = tempDir("mailbox-mcp");
  const outbox = new Outbox(join(dir, "outbox"));
  const server = createMailboxMcpServer(new MailboxStore(join(dir, "mailboxes")), "inbox", outbox);
  const [a, b] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "worker", version: "0" });
  await Promise.all([server.connect(a), client.connect(b)]);
  return { client, outbox };
}

describe("issue 32 item 7: a worker's report is kept exactly or refused", () => {
  it("a lone surrogate or a NUL in message_clankie's text is refused as invalid_text, and nothing enters the outbox", async () => {
    const { client, outbox } = await worker();
    for (const text of ["half \ud83d a pair", "nul \u0000 inside"]) {
      const r = await client.callTool({ name: "message_clankie", arguments: { text } });
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ received: false, deliveryStage: "rejected", reason: "invalid_text" });
    }
    expect(outbox.list().reports).toEqual([]);
    const ok = await client.callTool({ name: "message_clankie", arguments: { text: "a whole pair \ud83d\ude00" } });
    expect(ok.structuredContent).toMatchObject({ deliveryStage: "stored" });
    expect(outbox.list().reports.map((r) => r.text)).toEqual(["a whole pair \ud83d\ude00"]);
  });

  it("issue 32 item 4: message_clankie_status finds a report by its id in either case", async () => {
    const { client } = await worker();
    const ok = await client.callTool({ name: "message_clankie", arguments: { text: "kept" } });
    const id = (ok.structuredContent as { deliveryId: string }).deliveryId;
    const s = await client.callTool({ name: "message_clankie_status", arguments: { deliveryId: id.toUpperCase() } });
    expect(s.structuredContent).toMatchObject({ deliveryId: id, deliveryStage: "stored" });
  });
});
