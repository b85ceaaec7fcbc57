/**
 * The worker's side of a mailbox seat: a stdio MCP server the worker's harness spawns,
 * with read_mailbox, and message_clankie for reports to the lead. It reads the inbox files on this machine directly; it is
 * worker-side code, so it is the one part of node-agent/ that speaks MCP.
 */
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MailboxStore } from "../node-agent/mailbox/store.js";
import { Outbox } from "../node-agent/mailbox/outbox.js";
import { INVALID_TEXT, journalTextProblem } from "../shared/well-formed-text.js";

export const MAX_REPORT_CHARS = 32_768;

export function createMailboxMcpServer(store: MailboxStore, seatName: string, outbox: Outbox): McpServer {
  const server = new McpServer({ name: "clankie-mailbox", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.registerTool(
    "read_mailbox",
    {
      title: "Read my mailbox",
      description: `Messages from leads to this worker's mailbox seat (${seatName}) that it has not read yet. Set peek to leave them unread.`,
      inputSchema: z.object({ peek: z.boolean().optional() }).strict(),
    },
    async ({ peek }) => {
      if (!store.exists(seatName)) {
        return { isError: true, content: [{ type: "text", text: `no mailbox named ${seatName} on this machine` }] };
      }
      const { entries, unreadable } = store.readUnread(seatName, { peek: peek ?? false });
      const messages = entries.map((e) => ({
        deliveryId: e.deliveryId,
        seq: e.seq,
        from: e.conversationId,
        inReplyTo: e.inReplyTo,
        receivedAt: new Date(e.receivedAtMs).toISOString(),
        text: e.text,
      }));
      const body = { seat: seatName, messages, unreadableFiles: unreadable };
      return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
    },
  );
  server.registerTool(
    "message_clankie",
    {
      title: "Report to your lead",
      description:
        "Send a report to the lead conversation that hired or last messaged this seat. 'stored' means it is kept on this machine until the controller holds it; it is not yet read.",
      inputSchema: z.object({ text: z.string().min(1).max(MAX_REPORT_CHARS) }).strict(),
    },
    async ({ text }) => {
      // Refused before the outbox: the wire's UTF-8 or the journal would change it, and a report
      // the controller refuses would hold the outbox's queue (issue 32 item 7).
      const problem = journalTextProblem(text);
      if (problem) {
        const detail = `${problem}; nothing was stored`;
        const refused = { schemaVersion: 1, received: false, deliveryStage: "rejected", reason: INVALID_TEXT, detail };
        return {
          isError: true,
          content: [{ type: "text" as const, text: JSON.stringify(refused) }],
          structuredContent: refused,
        };
      }
      const report = outbox.put(seatName, text);
      const body = { schemaVersion: 1, received: true, deliveryStage: "stored", deliveryId: report.id };
      return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
    },
  );
  server.registerTool(
    "message_clankie_status",
    {
      title: "Status of a report",
      description: "Whether a report is still stored on this machine or already held by the controller.",
      inputSchema: z.object({ deliveryId: z.string().uuid() }).strict(),
    },
    async ({ deliveryId: given }) => {
      // Ids are compared in their canonical case (issue 32 item 4).
      const deliveryId = given.toLowerCase();
      const body = {
        schemaVersion: 1,
        deliveryId,
        deliveryStage: outbox.holds(seatName, deliveryId) ? "stored" : "forwarded",
      };
      return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
    },
  );
  return server;
}

export async function serveMailboxMcp(mailboxDir: string, seatName: string, outboxDir: string): Promise<void> {
  const server = createMailboxMcpServer(new MailboxStore(mailboxDir), seatName, new Outbox(outboxDir));
  await server.connect(new StdioServerTransport());
}
