/**
 * The ways into the services a token alone cannot reach (issue 11, part 6; ADR 0021), for the
 * protobuf fuzz targets: a fuzz machine enrolled exactly as a real agent joins (join token from
 * the controller, a key pair made here, a CSR, the certificate the fleet CA signs), whose mutual-TLS
 * HTTP/2 sessions reach the agent port's services; and raw HTTP/2 sessions on the reverse link
 * the real node agent dials (to a test replica with a fleet-CA server certificate), which is the
 * path every controller-to-agent call takes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as h2connect, type ClientHttp2Session } from "node:http2";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { joinFleet } from "../../node-agent/identity/join.js";
import { AgentGatewayService, HeartbeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import type { RunningController } from "../../controller/main.js";
import { eq, sql } from "drizzle-orm";
import { controllerInstances } from "../../controller/db/schema.js";
import { startReversePeer, type ReversePeer } from "../kit/reverse-peer.js";

export interface EnrolledClient {
  readonly machine: string;
  /** A new mutual-TLS HTTP/2 session to the agent port with the fuzz machine's certificate. */
  connect(): ClientHttp2Session;
  /** A TLS session without a client certificate (the fleet CA pinned): what a joining agent has, served only EnrollmentService. */
  connectAnonymous(): ClientHttp2Session;
  /** A real gateway call with that certificate: throws when the agent port no longer answers. */
  heartbeat(): Promise<void>;
  close(): void;
}

export async function enrollFuzzClient(controller: RunningController, machine: string): Promise<EnrolledClient> {
  const stateDir = mkdtempSync(join(tmpdir(), "c11-fuzz-enrolled-"));
  const id = await joinFleet({
    stateDir,
    controllerUrl: controller.agentUrl,
    token: await controller.issueJoinToken(machine),
    agentVersion: "fuzz",
  });
  const tls = { ca: [id.caCertificatePem], cert: id.certificatePem, key: id.privateKeyPem };
  const gateway = createClient(
    AgentGatewayService,
    createGrpcTransport({ baseUrl: controller.agentUrl, nodeOptions: tls }),
  );
  return {
    machine: id.machine,
    connect: () => h2connect(controller.agentUrl, tls),
    connectAnonymous: () => h2connect(controller.agentUrl, { ca: tls.ca }),
    async heartbeat() {
      await gateway.heartbeat(create(HeartbeatRequestSchema, { machine: id.machine, instanceId: "fuzz" }), {
        timeoutMs: 10_000,
      });
    },
    close: () => rmSync(stateDir, { recursive: true, force: true }),
  };
}

export interface ReverseLinkSessions {
  /** The current session on the agent's reverse link; after the agent dropped one, the next it dials. */
  connect(): Promise<ClientHttp2Session>;
  close(): Promise<void>;
}

/**
 * The agent learns of the test replica from its next heartbeat answer and dials it; it redials whenever
 * a link drops. The replica heartbeats its row as a real one does, or the agent drops it as dead after 15 s.
 */
export async function reverseLinkSessions(controller: RunningController): Promise<ReverseLinkSessions> {
  const db = controller.database.db;
  const peer: ReversePeer = await startReversePeer(db);
  const beat = setInterval(
    () =>
      void db
        .update(controllerInstances)
        .set({ heartbeatAt: sql`now()` })
        .where(eq(controllerInstances.agentUrl, peer.url))
        .catch(() => {}),
    3_000,
  );
  let next = peer.nextLink();
  const watched = new WeakSet<ClientHttp2Session>();
  const connect = async (): Promise<ClientHttp2Session> => {
    const link = await Promise.race([
      next,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("the agent did not dial the test replica within 30 s")), 30_000).unref(),
      ),
    ]);
    // The session after this one is the agent's next dial.
    if (link.session.closed || link.session.destroyed) {
      next = peer.nextLink();
      return connect();
    }
    if (!watched.has(link.session)) {
      watched.add(link.session);
      link.session.once("close", () => (next = peer.nextLink()));
    }
    return link.session;
  };
  return {
    connect,
    close: () => {
      clearInterval(beat);
      return peer.close();
    },
  };
}
