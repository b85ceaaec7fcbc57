/**
 * The controller's calls to agents ride sockets the agents dialed (ADR 0021): on each
 * reverse socket the controller is the HTTP/2 client, and Connect's session manager runs
 * over it unchanged. A socket that closes is dropped; only the agent redials, so a call in
 * flight when a link drops fails (uncertain at the caller) and is never resent here.
 */
import { EventEmitter } from "node:events";
import type { ClientHttp2Session } from "node:http2";
import type { TLSSocket } from "node:tls";
import { Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { traceSendInterceptor } from "../../shared/rpc/trace-context.js";
import { AgentService } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import type { AgentConnection } from "../nodes/agent-clients.js";
import type { PeerIdentity } from "./peer-identity.js";
import { createUnaryLinkTransport } from "./unary-link-transport.js";
import type { GatewayTunnelServer } from "./gateway-tunnel.js";
import { roundTripPayload } from "../../shared/link-ping-payload.js";

/**
 * A link's PINGs go out this far apart, send to send. From the answer (2 s), a sweep a second
 * sent them every 3 s: 333 a second at 1,000 links, the largest share of the controller's idle
 * CPU (issue 36). Under the agent's 5 s, past which it pings on its own (link-round-trips.ts).
 */
export const LINK_PING_MS = 4_500;
/** A PING unanswered this long cuts its link: 4.5 + 3.5 + 0.5 = 8.5 s at most (startPings). */
export const LINK_PING_TIMEOUT_MS = 3_500;
/** How often the sweep looks at every link: half a second keeps the cut's slack small. */
export const LINK_PING_SWEEP_MS = 500;
/**
 * How long a call to a machine that is online through another replica waits for its link here.
 * An agent dials every replica the fleet names in its registration's answer, so right after it
 * comes online (or a replica starts) a call balanced to a replica it has not linked to yet would
 * otherwise be refused although the link is a moment away.
 */
export const LINK_ARRIVAL_GRACE_MS = 5_000;

/** The manager's open session, if any (its state object is not public API; absent, a link is not pinged). */
function sessionOf(m: Http2SessionManager): ClientHttp2Session | undefined {
  const conn = (m as unknown as { s?: { conn?: unknown } }).s?.conn;
  return conn && typeof (conn as ClientHttp2Session).ping === "function" ? (conn as ClientHttp2Session) : undefined;
}

interface Link {
  /** When the sweep's PING on this link was sent, until it is answered. */
  pingSentAt?: number | undefined;
  /** When the last answered PING was sent: the next goes out LINK_PING_MS after it. */
  lastSentAt?: number | undefined;
  /** The last PING's round trip (ms), sent to the agent in the next one: its transit bound. */
  roundTripMs?: number | undefined;
  readonly peer: PeerIdentity;
  readonly socket: TLSSocket;
  readonly sessions: Http2SessionManager;
  readonly at: number;
  /** The Connect client on this link, built at its first call and kept while the token holds. */
  connection?: AgentConnection & { token: string; transport: Transport };
}

export interface ReverseLinkOptions {
  /** Whether the machine is online through the fleet, so a link from it here is on its way. */
  expected?: (machine: string) => Promise<boolean>;
  arrivalGraceMs?: number;
}

export class ReverseLinks extends EventEmitter<{ linked: [machine: string]; unlinked: [machine: string] }> {
  private readonly byMachine = new Map<string, Link>();
  /** Every open link socket, the superseded ones still draining too (the metrics count them). */
  private readonly sockets = new Set<TLSSocket>();
  /** Added to every link's calls after the bearer and trace ones (the metrics' call timing). */
  private readonly extra: Interceptor[] = [];
  /** Serves the agent's gateway calls on each link (gateway-tunnel.ts); none, the agent dials `h2`. */
  private tunnel: GatewayTunnelServer | undefined;
  /** Calls waiting for a machine's first link here, woken by `accept`. */
  private readonly arrivals = new Map<string, Set<() => void>>();

  constructor(private readonly options: ReverseLinkOptions = {}) {
    super();
  }

  /** Opens the gateway tunnel on every link accepted from now on. */
  serveGatewayTunnel(tunnel: GatewayTunnelServer): void {
    this.tunnel = tunnel;
  }

  /** Adds an interceptor to the calls of every link built from now on. */
  intercept(i: Interceptor): void {
    this.extra.push(i);
  }

  /** Open reverse-link sockets on this replica. */
  openSockets(): number {
    return this.sockets.size;
  }

  accept(socket: TLSSocket, peer: PeerIdentity): void {
    this.sockets.add(socket);
    // The authority is only a label: the socket is already connected and authenticated.
    const sessions = new Http2SessionManager(
      `http://${peer.machine}.agent.clankie`,
      { pingIntervalMs: 30_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 2 ** 31 - 1 },
      { createConnection: () => socket },
    );
    const link: Link = { peer, socket, sessions, at: Date.now() };
    // Open the session now: the agent's SETTINGS are already on their way.
    void sessions.connect().then((state) => {
      const session = sessionOf(sessions);
      if (state !== "error" && session && !socket.destroyed) this.tunnel?.(session, peer);
    });
    const previous = this.byMachine.get(peer.machine);
    this.byMachine.set(peer.machine, link);
    // The agent redialed (or renewed its certificate): the old socket finishes its streams.
    if (previous) setTimeout(() => previous.sessions.abort(), 30_000).unref();
    socket.once("close", () => {
      this.sockets.delete(socket);
      sessions.abort();
      if (this.byMachine.get(peer.machine) === link) {
        this.byMachine.delete(peer.machine);
        this.emit("unlinked", peer.machine);
      }
    });
    this.emit("linked", peer.machine);
    for (const wake of this.arrivals.get(peer.machine) ?? []) wake();
  }

  /**
   * True once the machine is linked here: at once when it is, after waiting up to the grace when
   * it is online through the fleet (its link is on its way), false at once when it is not.
   */
  private async arrival(machine: string, signal?: AbortSignal): Promise<boolean> {
    if (this.has(machine)) return true;
    if (!(await this.options.expected?.(machine).catch(() => false))) return false;
    if (this.has(machine)) return true;
    const waiting = this.arrivals.get(machine) ?? new Set();
    this.arrivals.set(machine, waiting);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        waiting.delete(done);
        if (waiting.size === 0 && this.arrivals.get(machine) === waiting) this.arrivals.delete(machine);
        resolve(this.has(machine));
      };
      const timer = setTimeout(done, this.options.arrivalGraceMs ?? LINK_ARRIVAL_GRACE_MS);
      signal?.addEventListener("abort", done);
      waiting.add(done);
    });
  }

  /**
   * Pings every link's session LINK_PING_MS after its previous PING was sent and cuts a link whose
   * PING went unanswered for LINK_PING_TIMEOUT_MS: a frozen or unplugged agent's link is gone
   * within 4.5 + 3.5 + 0.5 = 8.5 s of its last answer (sweep granularity included), which keeps rule 55
   * once the fleet's heartbeat interval has grown (registry.isOnline). One sweep for all links,
   * not a timer each; the agent's HTTP/2 stack answers a PING before its JavaScript reads it. Not
   * the session manager's own idle pings: its timer can fire on a session already destroyed and
   * throw outside any caller (connect-es #683), which would end the controller.
   * Each PING carries the round trip of the one before (shared/link-ping-payload.ts): the agent's
   * transit bound rides this stream instead of a PING stream of its own, which woke the controller
   * for every agent at its own moment (issue 36). The period stays under the agent's 5 s: a link
   * with no sample for that long gets the agent's own PING (link-round-trips.ts).
   */
  startPings(sweepMs = LINK_PING_SWEEP_MS, cutSilent: () => boolean = () => true): { stop(): void } {
    // Half a sweep's slack: a sweep a few ms early must not push a PING to the next one.
    const due = LINK_PING_MS - sweepMs / 2;
    const timer = setInterval(() => {
      const t = Date.now();
      for (const l of this.byMachine.values()) {
        if (l.socket.destroyed) continue;
        if (l.pingSentAt !== undefined) {
          // Only while rule 55 needs it: in a small fleet heartbeats judge liveness, and a call in
          // flight to a stalled agent ends as "went offline (no heartbeat)", as it always did.
          if (t - l.pingSentAt > LINK_PING_TIMEOUT_MS && cutSilent()) l.socket.destroy();
          continue;
        }
        if (t - (l.lastSentAt ?? 0) < due) continue;
        const session = sessionOf(l.sessions);
        if (!session || session.destroyed || session.closed) continue;
        try {
          l.pingSentAt = t;
          // The duration is HTTP/2's own, send to ack: as the agent measured its own PINGs.
          const answered = (err: Error | null, ms: number) => {
            l.pingSentAt = undefined;
            if (err) return;
            l.lastSentAt = t;
            l.roundTripMs = ms;
          };
          if (l.roundTripMs === undefined) session.ping(answered);
          else session.ping(roundTripPayload(l.roundTripMs), answered);
        } catch {
          l.pingSentAt = undefined; // Closing, or too many PINGs in flight: the next sweep tries again.
        }
      }
    }, sweepMs);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  has(machine: string): boolean {
    const l = this.byMachine.get(machine);
    return !!l && !l.socket.destroyed;
  }

  machines(): string[] {
    return [...this.byMachine.keys()];
  }

  /** The machines whose current link is live (a closing socket not yet dropped is not). */
  linkedMachines(): string[] {
    const out: string[] = [];
    for (const [machine, l] of this.byMachine) if (!l.socket.destroyed) out.push(machine);
    return out;
  }

  /** A connection on the machine's current link; `connect()` is false when there is none. */
  connection(machine: string, token: string): AgentConnection {
    return this.linked(machine, token) ?? this.unlinked(machine, token);
  }

  /** The connection on the machine's current link, if it has one. */
  private linked(machine: string, token: string): Link["connection"] {
    const link = this.byMachine.get(machine);
    if (!link) return undefined;
    // Once per link, not per delivery: a transport, its interceptor chain and a client (a
    // wrapper per method) were built for every call (issue 17's profile).
    if (link.connection?.token === token) return link.connection;
    const baseUrl = `http://${machine}.agent.clankie`;
    const interceptors = [bearerHeaderInterceptor(() => token), traceSendInterceptor(), ...this.extra];
    // Unary calls (every delivery) skip Connect's per-call stream pipeline (unary-link-transport.ts).
    const fallback = createGrpcTransport({ baseUrl, sessionManager: link.sessions, interceptors });
    const transport = createUnaryLinkTransport({ baseUrl, sessions: link.sessions, interceptors, fallback });
    const conn = {
      machine,
      endpoint: `reverse link of ${machine}`,
      token,
      transport,
      client: createClient(AgentService, transport),
      async connect() {
        if (link.socket.destroyed) return false;
        return (await link.sessions.connect()) !== "error";
      },
      close() {
        // The link belongs to the agent's socket, not to one caller.
      },
    };
    link.connection = conn;
    return conn;
  }

  /**
   * No link to this replica yet: a call waits for the link while the machine is online through
   * the fleet (`arrival`), then rides it; otherwise it fails before anything is sent.
   */
  private unlinked(machine: string, token: string): AgentConnection {
    const linked = async (signal: AbortSignal | undefined): Promise<Transport> => {
      const conn = (await this.arrival(machine, signal)) ? this.linked(machine, token) : undefined;
      if (conn) return conn.transport;
      throw new ConnectError(`${machine} has no live link to this controller; nothing was sent`, Code.Unavailable);
    };
    // The deadline counts from the call, so the wait for the link is part of it.
    const left = (timeoutMs: number | undefined, since: number) =>
      timeoutMs === undefined ? undefined : Math.max(1, Math.ceil(timeoutMs - (performance.now() - since)));
    const transport: Transport = {
      async unary(method, signal, timeoutMs, header, input, contextValues) {
        const since = performance.now();
        const t = await linked(signal);
        return t.unary(method, signal, left(timeoutMs, since), header, input, contextValues);
      },
      async stream(method, signal, timeoutMs, header, input, contextValues) {
        const since = performance.now();
        const t = await linked(signal);
        return t.stream(method, signal, left(timeoutMs, since), header, input, contextValues);
      },
    };
    return {
      machine,
      endpoint: `reverse link of ${machine}`,
      client: createClient(AgentService, transport),
      connect: async () => !!(await this.arrival(machine)) && !!(await this.linked(machine, token)?.connect()),
      close() {},
    };
  }

  closeAll(): void {
    for (const l of this.byMachine.values()) {
      l.sessions.abort();
      l.socket.destroy();
    }
    this.byMachine.clear();
    this.sockets.clear();
    for (const waiting of this.arrivals.values()) for (const wake of waiting) wake();
  }
}
