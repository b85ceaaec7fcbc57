/**
 * What mutual TLS costs on the agent link (issue 10): one small gateway call on a warm
 * connection against the same call on a fresh one (TCP + TLS 1.3 handshake with client
 * certificate + HTTP/2 setup), side by side with the plaintext h2c port doing the same with
 * a health check. The bench enrolls an identity of its own for this (a real join).
 */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AgentGatewayService, HeartbeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { Health, HealthCheckRequestSchema } from "../../shared/gen/grpc/health/v1/health_pb.js";
import { joinFleet } from "../../node-agent/identity/join.js";
import { removeScratch, scratchDir } from "../paths.js";
import { summarize } from "../stats.js";
import type { BenchFleet } from "../fleet.js";

export async function runTlsHandshake(fleet: BenchFleet, n: number) {
  const dir = scratchDir("tls-identity");
  try {
    const id = await joinFleet({
      stateDir: dir,
      controllerUrl: fleet.agentEndpoint,
      token: await fleet.enroll("bench-tls"),
      agentVersion: "bench",
    });
    const tls = { ca: [id.caCertificatePem], cert: id.certificatePem, key: id.privateKeyPem };
    const heartbeat = create(HeartbeatRequestSchema, { machine: "bench-tls", instanceId: "bench" });
    const check = create(HealthCheckRequestSchema, { service: "" });
    // Own session managers, so every fresh connection is closed after its one call.
    const open = <S extends typeof AgentGatewayService | typeof Health>(svc: S, baseUrl: string, opts?: typeof tls) => {
      const sessions = new Http2SessionManager(baseUrl, undefined, opts);
      return {
        client: createClient(svc, createGrpcTransport({ baseUrl, sessionManager: sessions })),
        close: () => sessions.abort(),
      };
    };
    const once = async <T>(c: { close(): void }, f: () => Promise<T>) => {
      try {
        return await f();
      } finally {
        c.close();
      }
    };
    const warmTls = open(AgentGatewayService, fleet.agentEndpoint, tls).client;
    const warmPlain = open(Health, fleet.url).client;
    await warmTls.heartbeat(heartbeat);
    await warmPlain.check(check);
    const s = {
      tlsWarm: [] as number[],
      tlsFresh: [] as number[],
      plainWarm: [] as number[],
      plainFresh: [] as number[],
    };
    const time = async (into: number[], f: () => Promise<unknown>) => {
      const t0 = performance.now();
      await f();
      into.push(performance.now() - t0);
    };
    // Alternating, so machine noise hits every variant alike.
    for (let i = 0; i < n; i++) {
      await time(s.tlsWarm, () => warmTls.heartbeat(heartbeat));
      const t = open(AgentGatewayService, fleet.agentEndpoint, tls);
      await time(s.tlsFresh, () => once(t, () => t.client.heartbeat(heartbeat)));
      await time(s.plainWarm, () => warmPlain.check(check));
      const p = open(Health, fleet.url);
      await time(s.plainFresh, () => once(p, () => p.client.check(check)));
    }
    return {
      mtls_warm: summarize(s.tlsWarm),
      mtls_fresh: summarize(s.tlsFresh),
      h2c_warm: summarize(s.plainWarm),
      h2c_fresh: summarize(s.plainFresh),
      method:
        "one unary call per sample: Heartbeat on the agent port (TLS 1.3, ECDSA P-256 client certificate) vs Health.Check on the plaintext h2c port; warm = one reused HTTP/2 connection, fresh = a new connection (TCP + handshake + HTTP/2 SETTINGS) per call",
    };
  } finally {
    removeScratch(dir);
  }
}
