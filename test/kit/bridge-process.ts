/** `clankie mcp` (the dist/ build) under the MCP SDK's own stdio client, as a lead's harness runs it. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CLI } from "./cli.js";

export type BridgeResult = CallToolResult & { structuredContent?: Record<string, unknown> };

export interface BridgeProcess {
  client: Client;
  call(name: string, args: Record<string, unknown>): Promise<BridgeResult>;
  stderr(): string;
  close(): Promise<void>;
}

export async function startBridgeProcess(args: string[], env: Record<string, string> = {}): Promise<BridgeProcess> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp", "--log-level", "info", ...args],
    env: { PATH: process.env.PATH ?? "", ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "bridge-test-lead", version: "0.0.0" });
  await client.connect(transport);
  return {
    client,
    call: async (name, a) =>
      (await client.callTool({ name, arguments: a }, undefined, { timeout: 120_000 })) as BridgeResult,
    stderr: () => stderr,
    close: () => client.close(),
  };
}
