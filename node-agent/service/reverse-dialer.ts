/**
 * The agent's reverse links (ADR 0021): it dials each live controller replica's agent port
 * with its certificate, and serves AgentService as the HTTP/2 *server* on the socket it
 * opened, so it needs no inbound port. A link that drops is redialled with backoff; a
 * request that was in flight on it is not replayed by anyone (the controller records it
 * uncertain).
 */
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import type { Http2Server, ServerHttp2Session } from "node:http2";
import { REVERSE_ALPN } from "../../shared/pki/alpn.js";
import type { Logger } from "../../shared/logger.js";
import { agentUrlParts } from "../identity/join.js";
import type { TlsMaterial } from "../identity/identity-keeper.js";

const MIN_BACKOFF_MS = 200;
/**
 * A fleet whose controller restarted comes back within one of these after it listens again
 * (issue 36: at 10 s the relink p50 at 100 agents was 16 s from the controller's ready); the
 * full jitter below spreads the redials over it, so a restart is not met by every agent at once.
 */
const MAX_BACKOFF_MS = 5_000;
/** A link that lived this long was healthy: the next drop starts the backoff over. */
const HEALTHY_AFTER_MS = 10_000;
/**
 * A dial whose TLS handshake has not finished by then is given up and redialled: without a bound
 * a dial the controller never answers (its accept queue overflowed under a restart's storm of
 * 1,000 dials, issue 36, or a middlebox holds the connection) would wait for TCP's own timeouts,
 * many minutes once established. Generous: during such a storm the controller answers late, and
 * a redial would only add to it.
 */
export const LINK_HANDSHAKE_TIMEOUT_MS = 15_000;

export interface ReverseDialer {
  /** The replicas to keep a link to; links to others are closed. */
  setUrls(urls: string[]): void;
  /** Dials every link again (after a certificate renewal); the old sockets finish on their own. */
  redialAll(): void;
  connectedUrls(): string[];
  /** The replica URL a reverse-link session was dialed to. */
  urlOf(session: ServerHttp2Session): string | undefined;
  close(): void;
}

export function startReverseDialer(o: {
  server: Http2Server;
  tls: () => TlsMaterial;
  logger: Logger;
  onLinked?: (url: string) => void;
  handshakeTimeoutMs?: number;
}): ReverseDialer {
  const links = new Map<string, Link>();
  let closed = false;
  // Each emitted socket's HTTP/2 session, told apart by the socket's local port.
  const awaiting = new Map<number, (session: ServerHttp2Session) => void>();
  const urlOfSession = new WeakMap<ServerHttp2Session, string>();
  o.server.on("session", (session: ServerHttp2Session) => {
    const port = session.socket?.localPort;
    const f = port === undefined ? undefined : awaiting.get(port);
    if (port !== undefined) awaiting.delete(port);
    f?.(session);
  });

  class Link {
    socket: TLSSocket | undefined;
    connected = false;
    backoffMs = MIN_BACKOFF_MS;
    timer: NodeJS.Timeout | undefined;
    closed = false;

    constructor(readonly url: string) {
      this.dial();
    }

    dial(): void {
      if (this.closed) return;
      const { host, port, servername } = agentUrlParts(this.url);
      const socket = tlsConnect({
        host,
        port,
        servername,
        ...o.tls(),
        ALPNProtocols: [REVERSE_ALPN],
        minVersion: "TLSv1.3",
      });
      const previous = this.socket;
      this.socket = socket;
      let openedAt = 0;
      socket.setNoDelay(true);
      const handshake = setTimeout(() => {
        o.logger.warn("reverse link handshake timed out; redialling", { url: this.url });
        socket.destroy();
      }, o.handshakeTimeoutMs ?? LINK_HANDSHAKE_TIMEOUT_MS);
      handshake.unref();
      socket.once("secureConnect", () => {
        clearTimeout(handshake);
        if (socket.alpnProtocol !== REVERSE_ALPN) {
          o.logger.warn("controller does not offer reverse links", { url: this.url });
          socket.destroy();
          return;
        }
        openedAt = Date.now();
        // Linked only once the controller accepted the certificate and opened its session:
        // a revoked agent still completes the TLS handshake before the controller closes it.
        const localPort = socket.localPort;
        if (localPort !== undefined)
          awaiting.set(localPort, (session) => {
            urlOfSession.set(session, this.url);
            session.once("remoteSettings", () => {
              if (this.socket !== socket || socket.destroyed || this.closed) return;
              this.connected = true;
              o.logger.info("reverse link up", { url: this.url });
              o.onLinked?.(this.url);
            });
          });
        socket.once("close", () => {
          if (localPort !== undefined) awaiting.delete(localPort);
        });
        o.server.emit("connection", socket);
        // The controller retires the old link itself once its streams are done.
        void previous;
      });
      socket.on("error", (e: Error) => o.logger.debug("reverse link error", { url: this.url, error: e.message }));
      socket.once("close", () => {
        clearTimeout(handshake);
        if (this.socket !== socket) return;
        this.connected = false;
        if (this.closed) return;
        if (openedAt && Date.now() - openedAt > HEALTHY_AFTER_MS) this.backoffMs = MIN_BACKOFF_MS;
        const wait = Math.round(this.backoffMs * (0.5 + Math.random() * 0.5));
        o.logger.warn("reverse link down; redialling", { url: this.url, retryInMs: wait });
        this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.dial();
        }, wait);
        this.timer.unref();
      });
    }

    dialNowIfWaiting(): void {
      if (this.closed || this.connected || !this.timer) return;
      clearTimeout(this.timer);
      this.timer = undefined;
      this.backoffMs = MIN_BACKOFF_MS;
      this.dial();
    }

    close(): void {
      this.closed = true;
      if (this.timer) clearTimeout(this.timer);
      this.socket?.destroy();
    }
  }

  return {
    setUrls(urls) {
      // A registration or heartbeat answer may still arrive after close(): it must not dial again.
      if (closed) return;
      for (const [url, l] of links) {
        if (!urls.includes(url)) {
          l.close();
          links.delete(url);
        }
      }
      for (const url of urls) if (!links.has(url)) links.set(url, new Link(url));
      // An answer from the gateway shows the controller is back: a link waiting out its backoff
      // (grown while the controller was down) dials now instead of seconds after registering.
      for (const l of links.values()) l.dialNowIfWaiting();
    },
    redialAll() {
      for (const l of links.values()) if (l.connected) l.dial();
    },
    connectedUrls: () => [...links.values()].filter((l) => l.connected).map((l) => l.url),
    urlOf: (session) => urlOfSession.get(session),
    close() {
      closed = true;
      for (const l of links.values()) l.close();
      links.clear();
    },
  };
}
