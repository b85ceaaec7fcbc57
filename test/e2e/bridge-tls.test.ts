/**
 * `clankie mcp` off loopback (issue 13 item 5): when the controller listens on a
 * non-loopback address its MCP port speaks TLS under the fleet CA (the readiness line names
 * caFile). The bridge, started with no flags but the state directory, trusts that CA from
 * `<state dir>/fleet-ca.pem` and serves the lead's tools; nothing in the system trust store
 * is touched. Before this, it failed every call with a self-signed-certificate error.
 */
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore } from "../kit/test-db.js";
import { CLI, assertBuilt } from "../kit/cli.js";

/** A non-loopback IPv4 address of this machine: the controller then listens with TLS. */
function offLoopbackAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  throw new Error("this machine has no non-loopback IPv4 address to listen on");
}

describe("clankie mcp trusts the fleet CA when the controller listens off loopback (TLS)", () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let controller: RunningController;
  let client: Client;
  let stderr = "";

  beforeAll(async () => {
    assertBuilt();
    store = await prepareStore("pglite");
    const host = offLoopbackAddress();
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        host,
        port: 0,
        agentHost: host,
        agentPort: 0,
        databaseUrl: store.databaseUrl,
      }),
      silentLogger,
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "mcp", "--state-dir", store.stateDir, "--log-level", "info"],
      env: { PATH: process.env.PATH ?? "" },
      stderr: "pipe",
    });
    transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    client = new Client({ name: "bridge-tls-lead", version: "0.0.0" });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client?.close();
    await controller?.close();
    await store?.cleanup();
  });

  it("the controller's MCP URL is https off loopback, and the bridge's lead tools answer through it", async () => {
    expect(controller.mcpUrl).toMatch(/^https:\/\//);
    const r = await client.callTool({ name: "list_seats", arguments: {} });
    expect(r.isError, `${JSON.stringify(r)}\n${stderr}`).toBeFalsy();
    expect((r.structuredContent as { seats?: unknown[] }).seats).toEqual([]);
  });
});
