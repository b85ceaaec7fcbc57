/**
 * One port for everything the controller serves: the first bytes of each connection
 * decide. The HTTP/2 preface ("PRI * HTTP/2.0") goes to the h2c server (gRPC from agents,
 * grpcurl, grpc-js); anything else to HTTP/1.1 (MCP, Connect/JSON from browsers and
 * fetch, which never speak h2c).
 *
 * Bounds that hold before any handler or authentication runs (issues 11 and 32, ADR 0034): a
 * connection table where a connection that never finished a request gives way first
 * (connection-table.ts), a deadline for the first byte and for the request headers, a deadline
 * for the whole request, an idle timeout for HTTP/1.1 keep-alive and for HTTP/2 sessions with
 * no open stream, and per-session HTTP/2 abuse accounting (h2-session-guard.ts). A response sent before its request body was read closes the
 * connection (`Connection: close`), so a keep-alive client never finds it half-read.
 */
import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from "node:http";
import {
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { ConnectionTable } from "./connection-table.js";
import {
  H2SessionGuard,
  DEFAULT_H2_SESSION_LIMITS,
  type H2SessionLimits,
  type StreamScreen,
} from "./h2-session-guard.js";

export type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

export interface Listener {
  readonly port: number;
  readonly host: string;
  /** Open connections now (for tests and doctor). */
  connections(): number;
  /** Connections closed to make room, and HTTP/2 sessions closed for abuse, so far. */
  closedForCause(): { evicted: number; h2Abuse: number; h2StreamsOpened: number; h2StreamsAdmitted: number };
  close(): Promise<void>;
}

/** Off loopback the same port speaks TLS (ADR 0021): certificate and key from the fleet CA. */
export interface ListenerTls {
  cert: string;
  key: string;
}

export interface ListenerLimits {
  /** Time for a new connection's first byte and for a request's complete headers. */
  headersTimeoutMs: number;
  /** Time for a whole HTTP/1.1 request, body included (not the response). */
  requestTimeoutMs: number;
  /** An HTTP/1.1 connection between requests, or an HTTP/2 session with no open stream, is closed after this. */
  idleTimeoutMs: number;
  /** Open connections one peer address may hold; more are closed on accept. */
  maxConnectionsPerPeer: number;
  /** Connections one peer address may hold that have not yet sent a complete request. */
  maxUnprovenPerPeer: number;
  /** Open connections in all; when full, the oldest that never sent a complete request gives way. */
  maxConnections: number;
  h2: H2SessionLimits;
}

export const DEFAULT_LISTENER_LIMITS: ListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 30_000,
  // Enough to hold issue 32's 800 slow header senders from 4 addresses without closing any: a
  // closed one reconnects at once, and that churn, not the held sockets (~10 KB each), is what costs.
  maxConnectionsPerPeer: 512,
  maxUnprovenPerPeer: 256,
  maxConnections: 2048,
  h2: DEFAULT_H2_SESSION_LIMITS,
};

export async function listen(
  host: string,
  port: number,
  http1: (req: IncomingMessage, res: ServerResponse) => void,
  http2: { handler: Handler; screen?: StreamScreen },
  limits: ListenerLimits = DEFAULT_LISTENER_LIMITS,
  tls?: ListenerTls,
): Promise<Listener> {
  const h1 = createHttp1Server(
    // Node checks the header and request deadlines on this interval; its 30 s default would let them slip.
    {
      connectionsCheckingInterval: Math.max(250, Math.min(1000, limits.headersTimeoutMs / 2)),
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
    },
    (req, res) => {
      table.prove(req.socket);
      closeIfBodyUnread(req, res);
      http1(req, res);
    },
  );
  h1.keepAliveTimeout = limits.idleTimeoutMs;
  // The header and request deadlines are enforced by a timer node starts on "listening"; this
  // server never listens itself (it is handed connections), so start it here.
  h1.emit("listening");
  const table = new ConnectionTable(limits);
  const guard = new H2SessionGuard(limits.h2);
  const h2 = createHttp2Server(
    // Streams refused for the concurrency cap and malformed frames end the session early (Node's own bounds).
    // (Node documents both options; @types/node 20 lacks the first.)
    {
      maxSessionMemory: 16,
      maxSessionRejectedStreams: 32,
      maxSessionInvalidFrames: 32,
      settings: { maxConcurrentStreams: 128, maxHeaderListSize: 64 * 1024 },
    } as Parameters<typeof createHttp2Server>[0] & object,
    (req: Http2ServerRequest, res: Http2ServerResponse) => {
      // Only streams the guard let through get here (it owns the "stream" event).
      table.prove(req.stream.session?.socket);
      http2.handler(req, res);
    },
  );
  guard.watch(h2, http2.screen);
  h2.on("session", (session) => closeWhenIdle(session, limits.idleTimeoutMs));
  const onSocket = (socket: Socket) => {
    if (!table.admit(socket)) return;
    socket.setNoDelay(true);
    // A connection that never speaks holds a descriptor for nothing.
    socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy());
    socket.once("data", (chunk: Buffer) => {
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(chunk);
      if (chunk.subarray(0, 3).toString("latin1") === "PRI") {
        // An address that just abused HTTP/2 waits (h2-session-guard.ts); its bytes stay unread meanwhile.
        // http2 drains the bytes already buffered on the socket, then reads the handle itself:
        // a first read that is already abuse is never parsed.
        guard.whenUnheld(socket.remoteAddress, () => {
          if (socket.destroyed) return false;
          if (guard.refusesFirstRead(socket.remoteAddress, chunk)) socket.destroy();
          else h2.emit("connection", socket);
          return true;
        });
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    });
    socket.on("error", () => socket.destroy());
  };
  // The first decrypted bytes decide just as the plaintext ones do.
  const net = tls
    ? createTlsServer(
        {
          cert: tls.cert,
          key: tls.key,
          ALPNProtocols: ["h2", "http/1.1"],
          minVersion: "TLSv1.2",
          handshakeTimeout: limits.headersTimeoutMs,
        },
        onSocket,
      )
    : createNetServer(onSocket);
  // The table decides who gives way; this outer bound only caps TLS handshakes not yet in it.
  net.maxConnections = limits.maxConnections * 2;
  await new Promise<void>((resolve, reject) => {
    net.once("error", reject);
    net.listen(port, host, () => {
      net.off("error", reject);
      resolve();
    });
  });
  const address = net.address() as AddressInfo;
  return {
    port: address.port,
    host,
    connections: () => table.size(),
    closedForCause: () => ({ evicted: table.evicted(), ...guard.counts() }),
    close: () =>
      new Promise<void>((resolve) => {
        net.close(() => resolve());
        h1.close(() => {});
        h1.closeAllConnections();
        table.destroyAll();
      }),
  };
}

/**
 * A handler may answer (401, 413, RESOURCE_EXHAUSTED) without reading the body. Node would
 * then read and discard the rest on the same connection; closing it instead bounds the work
 * an unauthenticated sender can cause and keeps a keep-alive client from reusing a socket
 * whose request was never finished. The close lingers: the answer is sent, the write side
 * shut, and what the client still sends is read and dropped for a moment, so its kernel
 * never turns the close into a reset that would discard the answer before it was read.
 */
const LINGER_MS = 2_000;

function closeIfBodyUnread(req: IncomingMessage, res: ServerResponse): void {
  // A bodyless request completes right after the handler's synchronous part; only a body can be left unread.
  const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
  if (!hasBody) return;
  // Captured now: a handler that stops reading early (connect-node) detaches the request from it.
  const socket = req.socket;
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<typeof writeHead>) {
    if (!req.complete) {
      res.shouldKeepAlive = false;
      if (!socket.destroyed) lingerOnClose(socket);
    }
    return writeHead.apply(this, args);
  } as typeof writeHead;
}

function lingerOnClose(socket: Socket): void {
  socket.destroySoon = () => {
    socket.end();
    socket.on("data", () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };
}

/** Closes an HTTP/2 session once it has had no open stream for `idleMs`. */
function closeWhenIdle(session: ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => session.close(), idleMs);
    timer.unref();
  };
  arm();
  session.on("stream", (stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      open--;
      if (open === 0 && !session.closed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
}
