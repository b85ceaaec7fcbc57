/**
 * A second "replica" for tests: a real TLS listener with a server certificate from the
 * fleet's CA, advertised in controller_instances, so enrolled agents dial it exactly as
 * they dial a controller replica. Each reverse socket becomes a raw HTTP/2 client session
 * the test drives by hand (garbage frames, timing).
 */
import { connect as h2connect, type ClientHttp2Session } from "node:http2";
import { createServer, type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import type { Db } from "../../controller/db/open.js";
import { controllerInstances } from "../../controller/db/schema.js";
import { loadOrCreateCa } from "../../controller/fleet/ca.js";
import { FleetAuthority } from "../../controller/fleet/authority.js";
import { REVERSE_ALPN } from "../../shared/pki/alpn.js";

export interface ReversePeer {
  readonly url: string;
  /** The next agent that links here: its machine (from its certificate) and a session on its socket. */
  nextLink(): Promise<{ machine: string; session: ClientHttp2Session; socket: TLSSocket }>;
  close(): Promise<void>;
}

export async function startReversePeer(db: Db): Promise<ReversePeer> {
  const ca = await loadOrCreateCa(db, undefined);
  const server = await new FleetAuthority(db, ca, () => new Date()).serverCertificate(["localhost"], ["127.0.0.1"]);
  const waiting: ((l: { machine: string; session: ClientHttp2Session; socket: TLSSocket }) => void)[] = [];
  const sockets = new Set<TLSSocket>();
  const tls = createServer(
    {
      key: server.privateKeyPem,
      cert: server.certificatePem,
      ca: [ca.certificatePem],
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: [REVERSE_ALPN],
    },
    (socket) => {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      const machine = String(socket.getPeerCertificate().subject?.CN);
      const session = h2connect("http://agent", { createConnection: () => socket });
      session.on("error", () => {});
      waiting.shift()?.({ machine, session, socket });
    },
  );
  await new Promise<void>((r) => tls.listen(0, "127.0.0.1", () => r()));
  const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
  const id = randomUUID();
  await db.insert(controllerInstances).values({ id, pid: process.pid, host: "reverse-peer", agentUrl: url });
  return {
    url,
    nextLink: () => new Promise((r) => waiting.push(r)),
    async close() {
      await db.delete(controllerInstances).where(eq(controllerInstances.id, id));
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => tls.close(() => r()));
    },
  };
}
