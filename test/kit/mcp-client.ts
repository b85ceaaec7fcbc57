/** The official MCP client, connected to a controller with a lead token. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export interface LeadClient {
  client: Client;
  call(name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<CallToolResult & { structuredContent?: Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function connectLead(mcpUrl: string, token: string): Promise<LeadClient> {
  const client = new Client({ name: "clankie-test-lead", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return {
    client,
    call: async (name, args, meta) => (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult & { structuredContent?: Record<string, unknown> },
    close: () => client.close(),
  };
}
