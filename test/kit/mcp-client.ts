/** The official MCP client, connected to a controller with a lead token. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { fetchTrusting } from "../../bridge/trusting-fetch.js";

export interface LeadClient {
  client: Client;
  call(
    name: string,
    args: Record<string, unknown>,
    meta?: Record<string, unknown>,
  ): Promise<CallToolResult & { structuredContent?: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** `ca`: the fleet CA, when the controller listens off loopback (TLS). */
export async function connectLead(mcpUrl: string, token: string, ca?: string): Promise<LeadClient> {
  const client = new Client({ name: "clankie-test-lead", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    ...(ca ? { fetch: fetchTrusting(ca) } : {}),
  });
  await client.connect(transport);
  // Listing the tools makes the client validate every structuredContent against its tool's outputSchema, in every test.
  await client.listTools();
  return {
    client,
    call: async (name, args, meta) =>
      (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult & {
        structuredContent?: Record<string, unknown>;
      },
    close: () => client.close(),
  };
}
