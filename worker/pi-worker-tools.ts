/**
 * The worker-side tools for a Pi seat (`pi -e <dist>/worker/pi-worker-tools.js`):
 * Pi loads no MCP servers, so this extension offers the same message_clankie,
 * message_clankie_status, list_fleet_seats and message_peer as `clankie worker mcp`, by
 * running that very server in Pi's process over an in-memory MCP link. Claims, binding and
 * reconcile are the server's; the agent proves the caller from the kernel, and Pi runs in the
 * seat's pane. Inert unless CLANKIE_AGENT_STATE_DIR names the node agent's state directory.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createWorkerMcpServer } from "./fleet-mcp.js";

/** The slice of Pi's ExtensionAPI this extension uses (Pi 0.73). */
interface PiToolApi {
  registerTool(tool: {
    name: string;
    label: string;
    description: string;
    parameters: unknown;
    execute(
      toolCallId: string,
      params: Record<string, unknown>,
    ): Promise<{ content: { type: "text"; text: string }[]; details: unknown }>;
  }): void;
}

export default async function clankiePiWorkerTools(pi: PiToolApi): Promise<void> {
  const agentStateDir = process.env.CLANKIE_AGENT_STATE_DIR;
  if (!agentStateDir) return;
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await createWorkerMcpServer({ agentStateDir }).connect(serverSide);
  const client = new Client({ name: "clankie-pi-worker-tools", version: "0.1.0" });
  await client.connect(clientSide);
  for (const tool of (await client.listTools()).tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.title ?? tool.name,
      description: tool.description ?? tool.name,
      // Plain JSON Schema: Pi validates tool arguments against it (the server checks them again).
      parameters: tool.inputSchema,
      async execute(_id, params) {
        const r = await client.callTool({ name: tool.name, arguments: params });
        const text = (r.content as { type: string; text?: string }[])
          .filter((c) => c.type === "text")
          .map((c) => c.text ?? "")
          .join("\n");
        return { content: [{ type: "text", text }], details: r.structuredContent ?? {} };
      },
    });
  }
}
