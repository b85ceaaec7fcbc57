/**
 * Fleet identity (issue 10): join tokens, mutual TLS on the agent port, identity from the
 * client certificate only, reverse links, renewal and revocation — on real sockets, a real
 * database and real certificates. Every attack here must fail before any RPC runs, and
 * register nothing.
 */
import { randomUUID } from "node:crypto";
import { connect as h2connect, constants } from "node:http2";
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { connect as tlsConnect } from "node:tls";
import { statSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { joinFleet } from "../../node-agent/identity/join.js";
import { AgentGatewayService, RegisterRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { REVERSE_ALPN } from "../../shared/pki/alpn.js";
import {
  createCaCertificate,
  createCsr,
  generateKeyPair,
  issueCertificate,
  verifiedCsrKey,
} from "../../shared/pki/x509.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import { silentLogger } from "../../shared/logger.js";
import { controllerInstances, machines } from "../../controller/db/schema.js";
import { ownerOf } from "../kit/owner.js";
import { connectLead } from "../kit/mcp-client.js";
import { prepareStore, tempDir, DRIVERS, POSTGRES_ONCE } from "../kit/test-db.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";

const until = async (what: string, f: () => Promise<boolean> | boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** The handshake's outcome, and whether an HTTP/2 request got any answer. */
async function tryGateway(
  url: string,
  tls: { ca?: string[]; cert?: string; key?: string },
): Promise<{ answered: boolean; error?: string; grpcStatus?: string; grpcMessage?: string }> {
  const session = h2connect(url, { ...tls, rejectUnauthorized: !!tls.ca });
  return new Promise((resolve) => {
    session.on("error", (e) => resolve({ answered: false, error: e.message }));
    const req = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: "/clankie.fleet.v1.AgentGatewayService/Heartbeat",
      "content-type": "application/grpc+proto",
      te: "trailers",
    });
    req.on("response", (headers) => {
      resolve({
        answered: true,
        grpcStatus: String(headers["grpc-status"]),
        grpcMessage: decodeURIComponent(String(headers["grpc-message"] ?? "")),
      });
      session.destroy();
    });
    req.on("error", (e) => resolve({ answered: false, error: e.message }));
    req.on("close", () => resolve({ answered: false, error: "closed" }));
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

describe.each(DRIVERS)("fleet identity on %s", (driver) => {
  let controller: RunningController;
  let owner: ReturnType<typeof ownerOf>;
  let cleanup: () => Promise<void>;
  let stateDir: string;
  const agents: RunningAgent[] = [];

  beforeAll(async () => {
    const store = await prepareStore(driver);
    cleanup = store.cleanup;
    stateDir = store.stateDir;
    controller = await startController(
      compileControllerConfig({ stateDir, port: 0, databaseUrl: store.databaseUrl, heartbeatIntervalMs: 500 }),
      silentLogger,
    );
    owner = ownerOf(controller.url, controller.ownerToken);
  });
  afterAll(async () => {
    for (const a of agents) await a.close().catch(() => {});
    await controller?.close();
    await cleanup?.();
  });

  const machineRows = async () => (await controller.database.db.select().from(machines)).map((m) => m.name);
  const start = async (machine: string, dir = tempDir(`agent-${machine}`), joinToken?: string) => {
    const a = await startAgent(
      {
        ...compileAgentConfig({ stateDir: dir, controllerUrl: controller.agentUrl, machine }),
        joinToken: joinToken ?? (await owner.enroll(machine)),
      },
      silentLogger,
    );
    agents.push(a);
    await a.linked;
    return { agent: a, dir };
  };

  it("a join token makes a local key (0600) and a certificate naming fleet and machine; a later start needs no token", async () => {
    const { agent, dir } = await start("m1");
    expect(statSync(join(dir, "identity", "key.pem")).mode & 0o777).toBe(0o600);
    const id = agent.identity.identity;
    expect(id.machine).toBe("m1");
    expect(id.fleetId).toBe(controller.fleetId);
    expect(id.certificatePem).toMatch(/BEGIN CERTIFICATE/);
    const list = (await owner.fleet.listFleet({})).machines.find((m) => m.name === "m1");
    expect(list).toMatchObject({ status: "online" });
    expect(Number(list!.certificateNotAfterUnixMs)).toBeGreaterThan(Date.now());
    await agent.close();
    const again = await startAgent(compileAgentConfig({ stateDir: dir }), silentLogger);
    agents.push(again);
    await again.linked;
    expect(again.machine).toBe("m1");
  });

  it("a used, an expired and an unknown join token are refused clearly, and nothing is registered", async () => {
    const before = await machineRows();
    const token = await owner.enroll("twice");
    await joinFleet({ stateDir: tempDir("j1"), controllerUrl: controller.agentUrl, token, agentVersion: "t" });
    await expect(
      joinFleet({ stateDir: tempDir("j2"), controllerUrl: controller.agentUrl, token, agentVersion: "t" }),
    ).rejects.toThrow(/already used/);
    const short = await owner.enroll("late", 1000);
    await new Promise((r) => setTimeout(r, 1200));
    await expect(
      joinFleet({ stateDir: tempDir("j3"), controllerUrl: controller.agentUrl, token: short, agentVersion: "t" }),
    ).rejects.toThrow(/expired/);
    const forged = token.replace(/\.[A-Za-z0-9_-]{43}\./, `.${"A".repeat(43)}.`);
    await expect(
      joinFleet({ stateDir: tempDir("j4"), controllerUrl: controller.agentUrl, token: forged, agentVersion: "t" }),
    ).rejects.toThrow(/unknown join token/);
    expect(await machineRows()).toEqual(before);
    expect((await owner.fleet.listFleet({})).machines.map((m) => m.name)).not.toContain("late");
  });

  it("a join token for another fleet's CA is never sent: the agent checks the pinned fingerprint first", async () => {
    const token = await owner.enroll("pinned");
    const wrong = token.replace(/[0-9a-f]{64}$/, "0".repeat(64));
    await expect(
      joinFleet({ stateDir: tempDir("j5"), controllerUrl: controller.agentUrl, token: wrong, agentVersion: "t" }),
    ).rejects.toThrow(/refusing to send the token/);
    // The real token is still unused.
    await joinFleet({ stateDir: tempDir("j6"), controllerUrl: controller.agentUrl, token, agentVersion: "t" });
  });

  it("registering with only the old fleet token (or any bearer) is refused on both ports", async () => {
    const before = await machineRows();
    const req = create(RegisterRequestSchema, {
      machine: "intruder",
      endpoint: "http://127.0.0.1:9",
      agentToken: "x",
      instanceId: "i",
      capabilityVersion: 1,
    });
    const plain = createClient(
      AgentGatewayService,
      createGrpcTransport({ baseUrl: controller.url, interceptors: [bearerHeaderInterceptor(() => "fleet_anything")] }),
    );
    await expect(plain.register(req)).rejects.toThrow();
    const tlsNoCert = createClient(
      AgentGatewayService,
      createGrpcTransport({
        baseUrl: controller.agentUrl,
        nodeOptions: { ca: [controller.caCertificatePem] },
        interceptors: [bearerHeaderInterceptor(() => "fleet_anything")],
      }),
    );
    await expect(tlsNoCert.register(req)).rejects.toThrow();
    expect(await machineRows()).toEqual(before);
  });

  it("a certificate from another CA is refused before any RPC runs", async () => {
    const other = await generateKeyPair();
    const caPem = await createCaCertificate("fleet-evil", other.keys);
    const leaf = await generateKeyPair();
    const cert = await issueCertificate({
      ca: { certificatePem: caPem, keys: other.keys },
      subjectKey: leaf.keys.publicKey,
      commonName: "m1",
      fleetId: controller.fleetId,
      usage: "client",
      notAfter: new Date(Date.now() + 3_600_000),
    });
    const r = await tryGateway(controller.agentUrl, {
      ca: [controller.caCertificatePem],
      cert: cert.certificatePem,
      key: leaf.privateKeyPem,
    });
    expect(r.answered).toBe(false);
  });

  it("a certificate for m1 cannot act for m2: register, heartbeat, seat reports and the worker/peer calls naming m2 are refused", async () => {
    const dir = tempDir("m1-claims");
    const id = await joinFleet({
      stateDir: dir,
      controllerUrl: controller.agentUrl,
      token: await owner.enroll("m1b"),
      agentVersion: "t",
    });
    const gw = createClient(
      AgentGatewayService,
      createGrpcTransport({
        baseUrl: controller.agentUrl,
        nodeOptions: { ca: [id.caCertificatePem], cert: id.certificatePem, key: id.privateKeyPem },
      }),
    );
    await expect(
      gw.register(
        create(RegisterRequestSchema, { machine: "m2", agentToken: "t", instanceId: "i", capabilityVersion: 1 }),
      ),
    ).rejects.toThrow(/this certificate is for m1b; it cannot act for m2/);
    await expect(gw.reportSeats({ machine: "m2", instanceId: "i", seats: [] })).rejects.toThrow(/cannot act for m2/);
    // i13's worker and peer calls take the machine from the certificate too (ADR 0050 on ADR 0021).
    const worker = { machine: "m2", instanceId: "i", seatName: "w" };
    await expect(gw.bindWorker({ ...worker, occupantId: "o" })).rejects.toThrow(/cannot act for m2/);
    await expect(gw.submitWorkerMessage({ ...worker, id: randomUUID(), text: "x", binding: "b" })).rejects.toThrow(
      /cannot act for m2/,
    );
    await expect(gw.workerMessageStatus({ ...worker, id: randomUUID() })).rejects.toThrow(/cannot act for m2/);
    await expect(gw.listFleetSeats({ ...worker, binding: "b" })).rejects.toThrow(/cannot act for m2/);
    await expect(
      gw.sendPeerMessage({ ...worker, binding: "b", recipientSeat: "m1b/x", id: randomUUID(), text: "x" }),
    ).rejects.toThrow(/cannot act for m2/);
    await expect(gw.peerMessageStatus({ ...worker, binding: "b", id: randomUUID() })).rejects.toThrow(
      /cannot act for m2/,
    );
    expect(await machineRows()).not.toContain("m2");
    // With its own name it registers as itself.
    await gw.register(
      create(RegisterRequestSchema, { machine: "", agentToken: "t", instanceId: "i", capabilityVersion: 1 }),
    );
    expect(await machineRows()).toContain("m1b");
  });

  it("plaintext h2c to the agent port gets no HTTP/2 answer", async () => {
    const u = new URL(controller.agentUrl);
    const got = await new Promise<string>((resolve) => {
      const s = netConnect(Number(u.port), u.hostname, () =>
        s.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"),
      );
      let data = Buffer.alloc(0);
      s.on("data", (d) => (data = Buffer.concat([data, d])));
      s.on("error", () => {});
      s.on("close", () => resolve(data.toString("latin1")));
      setTimeout(() => s.destroy(), 3000).unref();
    });
    // A TLS alert at most, never an HTTP/2 SETTINGS frame (type 0x04 after a 3-byte length).
    expect(got).not.toContain("PRI");
    expect(got.length === 0 || got.charCodeAt(0) === 0x15).toBe(true);
  });

  it("a reverse link without a certificate is refused", async () => {
    const u = new URL(controller.agentUrl);
    const closed = await new Promise<boolean>((resolve) => {
      const s = tlsConnect({
        host: u.hostname,
        port: Number(u.port),
        ca: [controller.caCertificatePem],
        servername: "localhost",
        ALPNProtocols: [REVERSE_ALPN],
      });
      s.on("error", () => {});
      s.on("close", () => resolve(true));
      setTimeout(() => resolve(false), 3000).unref();
    });
    expect(closed).toBe(true);
  });

  it("the certificate is renewed before it expires without anyone's help, and the agent keeps serving", async () => {
    // Its own controller with 6-second certificates: renewal at half-life, every 3 s.
    const store = await prepareStore(driver);
    const short = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 500,
        machineCertTtlMs: 6_000,
      }),
      silentLogger,
    );
    const agent = await startAgent(
      {
        ...compileAgentConfig({ stateDir: tempDir("renewer"), controllerUrl: short.agentUrl }),
        joinToken: await short.issueJoinToken("renewer"),
      },
      silentLogger,
    );
    try {
      await agent.linked;
      const first = agent.identity.identity.certificatePem;
      await until("a renewal", () => agent.identity.identity.certificatePem !== first, 10_000);
      // Past the first certificate's expiry, deliveries still reach the agent on its renewed links.
      await new Promise((r) => setTimeout(r, 4_000));
      const o = ownerOf(short.url, short.ownerToken);
      await o.owner.addSeat({ machine: "renewer", name: "rbox", kind: 1 });
      const lead = await connectLead(short.mcpUrl, short.leadToken);
      try {
        const res = await lead.call("message_seat", { seat: "renewer/rbox", message: "after renewal" });
        expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "delivered" });
      } finally {
        await lead.close();
      }
    } finally {
      await agent.close();
      await short.close();
      await store.cleanup();
    }
  });

  it("revoke: live links cut within seconds, seats offline, deliveries definite not-sent, reconnect refused at the handshake", async () => {
    const { agent, dir } = await start("victim");
    await owner.owner.addSeat({ machine: "victim", name: "vbox", kind: 1 });
    const res = await owner.fleet.revokeMachine({ machine: "victim" });
    expect(res.revokedCertificates).toBeGreaterThan(0);
    await until("the links to drop", () => agent.linkedUrls().length === 0, 5_000);
    expect((await owner.fleet.listFleet({})).machines.find((m) => m.name === "victim")?.status).toBe("revoked");
    const lead = await connectLead(controller.mcpUrl, controller.leadToken);
    try {
      const r = await lead.call("message_seat", { seat: "victim/vbox", message: "to a revoked machine" });
      expect(r.structuredContent).toMatchObject({ outcome: "seat_offline" });
      expect((await owner.receipts()).find((x) => x.deliveryId === r.structuredContent!.deliveryId)?.state).toBe(
        "not_sent",
      );
    } finally {
      await lead.close();
    }
    expect(new MailboxStore(join(dir, "mailboxes")).list("vbox").entries).toHaveLength(0);
    // Its redials are refused: it never links again. Issue 37 item 1: the gateway's refusal is
    // typed (machine_revoked, gRPC PERMISSION_DENIED), not a reset, and the agent stops dialing.
    await new Promise((r) => setTimeout(r, 1500));
    expect(agent.linkedUrls()).toEqual([]);
    const id = agent.identity.identity;
    const refused = await tryGateway(controller.agentUrl, {
      ca: [id.caCertificatePem],
      cert: id.certificatePem,
      key: id.privateKeyPem,
    });
    expect(refused).toMatchObject({ answered: true, grpcStatus: "7" });
    expect(refused.grpcMessage).toMatch(/^machine_revoked: certificate of victim revoked at /);
    expect(await agent.revoked).toMatch(/certificate of victim revoked at/);
  });

  it("a relay in the middle (join, gateway and reverse links all through it) captures no token and no message text", async () => {
    const target = new URL(controller.agentUrl);
    const captured: Buffer[] = [];
    const relay = createNetServer((client) => {
      const upstream = netConnect(Number(target.port), target.hostname);
      client.on("data", (d: Buffer) => (captured.push(Buffer.from(d)), upstream.write(d)));
      upstream.on("data", (d: Buffer) => (captured.push(Buffer.from(d)), client.write(d)));
      for (const [a, b] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        a.on("error", () => b.destroy());
        a.on("close", () => b.destroy());
      }
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
    const relayUrl = `https://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    // This replica advertises the relay: the agent's reverse links ride it too.
    await controller.database.db
      .update(controllerInstances)
      .set({ agentUrl: relayUrl })
      .where(eq(controllerInstances.agentUrl, controller.agentUrl));
    // The replica list the gateway answers with is cached for 2 s (replicas.ts): one read just
    // before the update (the previous test's agents heartbeating) would still name the old URL.
    await new Promise((r) => setTimeout(r, 2_100));
    const token = await owner.enroll("relayed");
    const text = "the relayed secret plan 4242";
    try {
      const a = await startAgent(
        { ...compileAgentConfig({ stateDir: tempDir("relayed"), controllerUrl: relayUrl }), joinToken: token },
        silentLogger,
      );
      agents.push(a);
      await a.linked;
      expect(a.linkedUrls()).toEqual([relayUrl]);
      await owner.owner.addSeat({ machine: "relayed", name: "rin", kind: 1 });
      const lead = await connectLead(controller.mcpUrl, controller.leadToken);
      try {
        const r = await lead.call("message_seat", { seat: "relayed/rin", message: text });
        expect(r.structuredContent, JSON.stringify(r.structuredContent)).toMatchObject({ outcome: "delivered" });
      } finally {
        await lead.close();
      }
    } finally {
      await controller.database.db
        .update(controllerInstances)
        .set({ agentUrl: controller.agentUrl })
        .where(eq(controllerInstances.agentUrl, relayUrl));
      relay.close();
    }
    const bytes = Buffer.concat(captured);
    expect(bytes.length).toBeGreaterThan(1000);
    const secret = token.split(".")[2]!;
    for (const needle of [secret, token, text, "relayed/rin", controller.leadToken, controller.ownerToken])
      expect(bytes.includes(Buffer.from(needle))).toBe(false);
  });

  it("a CSR must be signed by its own key (P-256)", async () => {
    const k = await generateKeyPair();
    const csr = await createCsr("x", k.keys);
    await expect(verifiedCsrKey(csr)).resolves.toBeDefined();
    await expect(verifiedCsrKey(csr.replace(/A/g, "B"))).rejects.toThrow();
  });
});

describe.each(POSTGRES_ONCE)("one fleet CA per database (%s)", () => {
  it("two replicas on one PostgreSQL share the CA, and an agent links to both", async () => {
    const store = await prepareStore("postgres");
    const a = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 500,
      }),
      silentLogger,
    );
    const b = await startController(
      compileControllerConfig({
        stateDir: tempDir("replica-b"),
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 500,
      }),
      silentLogger,
    );
    try {
      expect(b.caCertificatePem).toBe(a.caCertificatePem);
      expect(b.agentUrl).not.toBe(a.agentUrl);
      const agent = await startAgent(
        {
          ...compileAgentConfig({ stateDir: tempDir("two"), controllerUrl: a.agentUrl }),
          joinToken: await a.issueJoinToken("both"),
        },
        silentLogger,
      );
      try {
        await until("links to both replicas", () => agent.linkedUrls().length === 2);
        expect(agent.linkedUrls().sort()).toEqual([a.agentUrl, b.agentUrl].sort());
      } finally {
        await agent.close();
      }
    } finally {
      await b.close();
      await a.close();
      await store.cleanup();
    }
  });
});
