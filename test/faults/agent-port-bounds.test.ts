/**
 * The agent port holds before authentication too (issue 11, part 1; ADR 0021 moved the gateway
 * there): a 300 MB body to EnrollmentService/Join over TLS with no client certificate (the one
 * route such a connection reaches) is RESOURCE_EXHAUSTED within its small read bound and never
 * buffered (the controller's own RSS, a real child process, stays within a fixed bound); an
 * enrolled machine's oversized gateway call is RESOURCE_EXHAUSTED the same way. Without the
 * adapters' read limits connect-node reads up to 4 GiB per message before it decodes.
 */
import { connect as h2connect, constants, type SecureClientSessionOptions } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedPglite, tempDir } from "../kit/test-db.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { FleetService, IssueJoinTokenRequestSchema } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import { joinFleet } from "../../node-agent/identity/join.js";

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(MiB, 0x61);
const RESOURCE_EXHAUSTED = 8;
/** What any one request may add to the controller's RSS; the bodies below are about 5× that. */
const RSS_BOUND = 64 * MiB;

/** DATA frames of one honestly length-prefixed gRPC message until the server answers; samples the controller's RSS. */
function floodGrpcTls(
  c: ControllerProcess,
  path: string,
  tls: SecureClientSessionOptions,
  totalBytes: number,
): Promise<{ grpcStatus: number; sentBytes: number; peakRssBytes: number }> {
  let peak = c.rssBytes();
  const sampler = setInterval(() => (peak = Math.max(peak, c.rssBytes())), 25);
  const session = h2connect(c.agentUrl, tls);
  session.on("error", () => {});
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    let headers: Record<string, unknown> = {};
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: path,
      "content-type": "application/grpc+proto",
      te: "trailers",
    });
    stream.write(
      Buffer.from([
        0,
        (totalBytes >>> 24) & 255,
        (totalBytes >>> 16) & 255,
        (totalBytes >>> 8) & 255,
        totalBytes & 255,
      ]),
    );
    const pump = () => {
      while (!answered && sent < totalBytes) {
        sent += CHUNK.length;
        if (!stream.write(CHUNK)) return void stream.once("drain", pump);
      }
      if (!answered) stream.end();
    };
    const finish = () => {
      clearInterval(sampler);
      session.destroy();
      const status = Number(headers["grpc-status"]);
      if (Number.isNaN(status)) reject(new Error(`no grpc-status: ${JSON.stringify(headers)}`));
      else resolve({ grpcStatus: status, sentBytes: sent, peakRssBytes: Math.max(peak, c.rssBytes()) });
    };
    stream.on("response", (h) => {
      headers = { ...h };
      if (h["grpc-status"] !== undefined && !answered) {
        answered = true;
        finish();
      }
    });
    stream.on("trailers", (t) => {
      headers = { ...headers, ...t };
      if (!answered) {
        answered = true;
        finish();
      }
    });
    stream.on("data", () => {});
    stream.on("error", () => {
      if (!answered) {
        answered = true;
        finish();
      }
    });
    pump();
  });
}

describe("the agent port's bounds, on a real controller process", () => {
  let c: ControllerProcess;

  beforeAll(async () => {
    const stateDir = tempDir("agent-port-bounds");
    seedPglite(stateDir);
    c = await startControllerProcess(stateDir);
  });
  afterAll(async () => {
    await c?.stop();
  });

  it("300 MB with no client certificate to EnrollmentService/Join: RESOURCE_EXHAUSTED, RSS bounded, not read whole", {
    timeout: 120_000,
  }, async () => {
    const before = c.rssBytes();
    // No certificate is what a joining agent has; this client does not even check the server's.
    const r = await floodGrpcTls(
      c,
      "/clankie.fleet.v1.EnrollmentService/Join",
      { rejectUnauthorized: false },
      300 * MiB,
    );
    expect(r.grpcStatus).toBe(RESOURCE_EXHAUSTED);
    expect(r.sentBytes).toBeLessThan(300 * MiB);
    expect(r.peakRssBytes - before).toBeLessThan(RSS_BOUND);
  });

  it("an enrolled machine's 300 MB gateway call: RESOURCE_EXHAUSTED, RSS bounded", { timeout: 120_000 }, async () => {
    // Enrolled as a real agent joins: a join token from the owner, a key pair and CSR made here.
    const fleet = createClient(
      FleetService,
      createGrpcTransport({ baseUrl: c.url, interceptors: [bearerHeaderInterceptor(() => c.ownerToken)] }),
    );
    const { token } = await fleet.issueJoinToken(create(IssueJoinTokenRequestSchema, { machine: "boundsbox" }));
    const id = await joinFleet({
      stateDir: tempDir("agent-port-bounds-agent"),
      controllerUrl: c.agentUrl,
      token,
      agentVersion: "test",
    });
    const before = c.rssBytes();
    const r = await floodGrpcTls(
      c,
      "/clankie.fleet.v1.AgentGatewayService/Register",
      { ca: [id.caCertificatePem], cert: id.certificatePem, key: id.privateKeyPem },
      300 * MiB,
    );
    expect(r.grpcStatus).toBe(RESOURCE_EXHAUSTED);
    expect(r.sentBytes).toBeLessThan(300 * MiB);
    expect(r.peakRssBytes - before).toBeLessThan(RSS_BOUND);
  });
});
