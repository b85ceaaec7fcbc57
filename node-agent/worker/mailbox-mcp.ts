/**
 * The worker's side of a mailbox seat: a stdio MCP server the worker's harness spawns,
 * with one tool, read_mailbox. It reads the inbox files on this machine directly; it is
 * worker-side code, so it is the one part of node-agent/ that speaks MCP.
 */
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MailboxStore } from "../mailbox/store.js";

export function createMailboxMcpServer(store: MailboxStore, seatName: string): McpServer {
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
      const messages = entries.map((e) => ({ deliveryId: e.deliveryId, seq: e.seq, from: e.conversationId, inReplyTo: e.inReplyTo, receivedAt: new Date(e.receivedAtMs).toISOString(), text: e.text }));
      const body = { seat: seatName, messages, unreadableFiles: unreadable };
      return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
    },
  );
  return server;
}

export async function serveMailboxMcp(mailboxDir: string, seatName: string): Promise<void> {
  const server = createMailboxMcpServer(new MailboxStore(mailboxDir), seatName);
  await server.connect(new StdioServerTransport());
}
