/**
 * The agent port: mutual TLS with the fleet CA, split by ALPN (ADR 0021).
 * - A socket with a valid, recorded, unrevoked machine certificate: `h2` carries the
 *   agent's calls to the gateway, `clankie-reverse/1` carries the controller's calls to it.
 * - A socket without a certificate may only call EnrollmentService.Join.
 * - A certificate from another CA, or plaintext: the socket is closed before any HTTP/2 frame
 *   is read. A fleet certificate that is revoked, removed or expired: on `h2` every call is
 *   answered with a typed refusal (machine_revoked, unauthenticated) and the socket closes.
 * Revocations (by any replica) are polled every second and cut live sockets.
 */
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import type { Logger } from "../../shared/logger.js";
import type { Db } from "../db/open.js";
import { GATEWAY_ALPN, REVERSE_ALPN } from "../../shared/pki/alpn.js";
import { certificatesVersion, checkCertificate, revokedAmong } from "./machine-certs.js";
import type { PeerIdentity } from "./peer-identity.js";
import { answerRefusal } from "./refusal-answer.js";

/** The agent port's accept queue: a whole fleet's relink at once (listen below). */
const AGENT_ACCEPT_BACKLOG = 4096;

export type IdentifiedHandler = (req: Http2ServerRequest, res: Http2ServerResponse, peer: PeerIdentity) => void;
export type AnonymousHandler = (req: Http2ServerRequest, res: Http2ServerResponse) => void;

export interface AgentListenerOptions {
  host: string;
  port: number;
  caPem: string;
  certificatePem: string;
  privateKeyPem: string;
  db: Db;
  logger: Logger;
  /** Gateway and renewal, for an identified agent. */
  gateway: IdentifiedHandler;
  /** Enrollment only, for a socket without a certificate. */
  enrollment: AnonymousHandler;
  /** A reverse link: the controller becomes the HTTP/2 client on this socket. */
  onReverse: (socket: TLSSocket, peer: PeerIdentity) => void;
  revocationPollMs?: number;
}

export interface AgentListener {
  readonly port: number;
  /** Closes every live socket of a machine now (this replica); returns how many. */
  cut(machine: string): number;
  close(): Promise<void>;
}

export async function listenForAgents(o: AgentListenerOptions): Promise<AgentListener> {
  const live = new Map<TLSSocket, PeerIdentity | undefined>();
  const enrollment = createHttp2Server({}, o.enrollment);
  const server = createTlsServer({
    key: o.privateKeyPem,
    // The chain lets a joining agent see the CA and compare it with its token's fingerprint.
    cert: o.certificatePem + o.caPem,
    ca: [o.caPem],
    requestCert: true,
    // Checked below: a socket without a certificate is still allowed to enroll.
    rejectUnauthorized: false,
    ALPNProtocols: [GATEWAY_ALPN, REVERSE_ALPN],
    minVersion: "TLSv1.3",
    handshakeTimeout: 10_000,
  });
  server.on("tlsClientError", (e: Error) => o.logger.debug("agent TLS handshake refused", { error: e.message }));
  // Every raw connection, handshaking or not, so close() never waits on one.
  const raw = new Set<import("node:net").Socket>();
  server.on("connection", (s: import("node:net").Socket) => {
    raw.add(s);
    s.once("close", () => raw.delete(s));
  });
  server.on("secureConnection", (socket: TLSSocket) => {
    socket.setNoDelay(true);
    socket.on("error", () => socket.destroy());
    socket.pause();
    live.set(socket, undefined);
    socket.once("close", () => live.delete(socket));
    const refuse = (why: string) => {
      o.logger.warn("agent connection refused", { why, remote: socket.remoteAddress });
      socket.destroy();
    };
    const peer = socket.getPeerCertificate();
    const presented = peer && Object.keys(peer).length > 0;
    if (!presented) {
      if (socket.alpnProtocol !== GATEWAY_ALPN) return refuse("no client certificate");
      enrollment.emit("connection", socket);
      socket.resume();
      return;
    }
    if (!socket.authorized)
      return refuse(`client certificate not from this fleet's CA: ${String(socket.authorizationError)}`);
    const machine = peer.subject?.CN;
    const serial = peer.serialNumber?.toLowerCase();
    if (typeof machine !== "string" || !serial) return refuse("client certificate names no machine");
    // Certificate validity is read on the system clock, the one the TLS handshake just used: the
    // journal's injectable clock moves receipts through time, not certificates.
    checkCertificate(o.db, serial, machine, new Date()).then(
      (verdict) => {
        if (socket.destroyed) return;
        if (!verdict.ok && socket.alpnProtocol === GATEWAY_ALPN) {
          o.logger.warn("agent connection refused", { why: verdict.reason, remote: socket.remoteAddress, machine });
          return answerRefusal(socket, verdict.revoked, verdict.reason);
        }
        if (!verdict.ok) return refuse(verdict.reason);
        const identity: PeerIdentity = { machine, serial, notAfter: verdict.notAfter };
        live.set(socket, identity);
        if (socket.alpnProtocol === REVERSE_ALPN) {
          // The HTTP/2 client session takes the socket over at once (nothing may be read before).
          o.onReverse(socket, identity);
          return;
        }
        // One small HTTP/2 server per socket, so every request carries its socket's identity.
        createHttp2Server({}, (req, res) => o.gateway(req, res, identity)).emit("connection", socket);
        socket.resume();
      },
      (e: Error) => refuse(`certificate check failed: ${e.message}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // A restarted controller's whole fleet dials back within seconds: a SYN the kernel drops for a full
    // accept queue is retried only after 1, 3, 7 s (issue 36: up to 7,941 overflows and a 42 s p99 relink
    // at 1,000 agents with Node's 511). The kernel caps it at net.core.somaxconn.
    server.listen({ port: o.port, host: o.host, backlog: AGENT_ACCEPT_BACKLOG }, () => {
      server.off("error", reject);
      resolve();
    });
  });

  const cutWhere = (pred: (p: PeerIdentity) => boolean): number => {
    let n = 0;
    for (const [socket, p] of live) {
      if (p && pred(p)) {
        socket.destroy();
        n++;
      }
    }
    return n;
  };
  // Revocations by any replica cut live sockets within a second. Each poll reads one digest of
  // the certificates (certificatesVersion); every live serial is checked only when it moved, and
  // a serial that arrived since the last full check is checked once (its admission read may
  // predate a revocation that already moved the digest).
  let seenVersion: string | undefined;
  const checked = new Set<string>();
  let polling = false;
  const poll = setInterval(() => {
    const now = Date.now();
    cutWhere((p) => p.notAfter.getTime() <= now);
    if (polling) return;
    polling = true;
    const serials = [...new Set([...live.values()].flatMap((p) => (p ? [p.serial] : [])))];
    certificatesVersion(o.db)
      .then(async (version) => {
        const moved = version !== seenVersion;
        const toCheck = moved ? serials : serials.filter((s) => !checked.has(s));
        const revoked = await revokedAmong(o.db, toCheck);
        seenVersion = version;
        if (moved) checked.clear();
        for (const s of toCheck) if (!revoked.has(s)) checked.add(s);
        const n = cutWhere((p) => revoked.has(p.serial));
        if (n) o.logger.warn("revoked machines' connections cut", { connections: n });
      })
      .catch((e: Error) => o.logger.warn("revocation poll failed", { error: e.message }))
      .finally(() => (polling = false));
  }, o.revocationPollMs ?? 1000);
  poll.unref();

  return {
    port: (server.address() as AddressInfo).port,
    cut: (machine) => cutWhere((p) => p.machine === machine),
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(poll);
        server.close(() => resolve());
        for (const s of live.keys()) s.destroy();
        for (const s of raw) s.destroy();
      }),
  };
}
