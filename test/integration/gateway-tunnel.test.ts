/**
 * Issue 36 (ADR 0042): a linked agent's gateway calls ride its reverse link, so each agent costs a
 * replica one TLS session, and the caller is still the link's client certificate: a machine
 * speaks only for itself through the tunnel too.
 */
import { execFileSync } from "node:child_process";
import { createServer as createH2Server } from "node:http2";
import { connect as tlsConnect } from "node:tls";
import { eq } from "drizzle-orm";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { machines } from "../../controller/db/schema.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { joinFleet } from "../../node-agent/identity/join.js";
import { GatewayTunnels } from "../../node-agent/service/gateway-tunnel.js";
import { AgentGatewayService, RegisterRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { REVERSE_ALPN } from "../../shared/pki/alpn.js";
import { silentLogger } from "../../shared/logger.js";
import { ownerOf } from "../kit/owner.js";
import { prepareStore, tempDir } from "../kit/test-db.js";

const until = async (what: string, f: () => Promise<boolean> | boolean, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** Established TCP connections to `port` on this host, counted from the dialing side. */
const socketsTo = (port: string) =>
  execFileSync("ss", ["-Htn", "state", "established", `( dport = :${port} )`], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l.trim()).length;

/** A transport that must not be used: every call through the tunnel, none beside it. */
const noDirect: Transport = {
  unary: () => Promise.reject(new ConnectError("went direct", Code.Internal)),
  stream: () => Promise.reject(new ConnectError("went direct", Code.Internal)),
};

describe("issue 36: the gateway tunnel", () => {
  let controller: RunningController;
  let owner: ReturnType<typeof ownerOf>;
  let cleanup: () => Promise<void>;
  const agents: RunningAgent[] = [];

  beforeAll(async () => {
    const store = await prepareStore("pglite");
    cleanup = store.cleanup;
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 500,
      }),
      silentLogger,
    );
    owner = ownerOf(controller.url, controller.ownerToken);
  });
  afterAll(async () => {
    for (const a of agents) await a.close().catch(() => {});
    await controller?.close();
    await cleanup?.();
  });

  it("issue 36: the agent port's accept queue holds a whole fleet dialing back at once (4,096, or the kernel's cap)", () => {
    const port = new URL(controller.agentUrl).port;
    // A listening socket's Send-Q is its backlog (Node's default, 511, dropped SYNs at 1,000 agents).
    const line = execFileSync("ss", ["-Hltn", `( sport = :${port} )`], { encoding: "utf8" }).trim();
    const backlog = Number(line.split(/\s+/)[2]);
    const cap = Number(execFileSync("sysctl", ["-n", "net.core.somaxconn"], { encoding: "utf8" }).trim());
    expect(backlog).toBe(Math.min(4096, cap));
  });

  it("a linked agent keeps one socket to the replica, and its heartbeats still land through the link", async () => {
    const machine = "tunnel-m1";
    const agent = await startAgent(
      {
        ...compileAgentConfig({ stateDir: tempDir("tunnel-m1"), controllerUrl: controller.agentUrl, machine }),
        joinToken: await owner.enroll(machine),
      },
      silentLogger,
    );
    agents.push(agent);
    await agent.linked;
    const port = new URL(controller.agentUrl).port;
    // The direct session it registered over closes once idle (5 s); the reverse link stays.
    await until("the direct gateway session closed", () => socketsTo(port) === 1);
    const seen = async () =>
      (await controller.database.db.select().from(machines).where(eq(machines.name, machine)))[0]?.lastSeenAt;
    const before = await seen();
    await until("a heartbeat after the direct session closed", async () => {
      const now = await seen();
      return !!now && !!before && now.getTime() > before.getTime();
    });
    expect(socketsTo(port)).toBe(1);
  });

  it("through the tunnel the caller is the link's certificate: naming another machine is refused", async () => {
    const id = await joinFleet({
      stateDir: tempDir("tunnel-m2"),
      controllerUrl: controller.agentUrl,
      token: await owner.enroll("tunnel-m2"),
      agentVersion: "t",
    });
    const u = new URL(controller.agentUrl);
    const tunnels = new GatewayTunnels(() => controller.agentUrl);
    const server = createH2Server({}, (req, res) => {
      if (!tunnels.accept(req, res)) res.writeHead(404).end();
    });
    const socket = tlsConnect({
      host: u.hostname,
      port: Number(u.port),
      servername: "localhost",
      ca: [id.caCertificatePem],
      cert: id.certificatePem,
      key: id.privateKeyPem,
      ALPNProtocols: [REVERSE_ALPN],
    });
    await new Promise<void>((r) => socket.once("secureConnect", () => r()));
    server.emit("connection", socket);
    try {
      await until("the controller opened the tunnel", () => !!tunnels.get(controller.agentUrl));
      const gw = createClient(AgentGatewayService, tunnels.transport(controller.agentUrl, noDirect));
      await expect(
        gw.register(
          create(RegisterRequestSchema, { machine: "m-other", agentToken: "t", instanceId: "i", capabilityVersion: 1 }),
        ),
      ).rejects.toThrow(/this certificate is for tunnel-m2; it cannot act for m-other/);
      await expect(gw.heartbeat({ machine: "m-other", instanceId: "i" })).rejects.toThrow(/cannot act for m-other/);
      // With its own name (or none) it registers as itself, and is then known to its heartbeat.
      await gw.register(
        create(RegisterRequestSchema, { machine: "", agentToken: "t", instanceId: "i", capabilityVersion: 1 }),
      );
      expect((await gw.heartbeat({ machine: "tunnel-m2", instanceId: "i" })).known).toBe(true);
      const rows = await controller.database.db.select().from(machines).where(eq(machines.name, "m-other"));
      expect(rows).toEqual([]);
    } finally {
      socket.destroy();
    }
    // A closed link ends its tunnel: the next call would go direct.
    await until("the tunnel closed with its link", () => !tunnels.get(controller.agentUrl));
  });
});
