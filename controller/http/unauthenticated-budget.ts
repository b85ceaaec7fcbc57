/**
 * What a caller without a token may cost (issue 32, ADR 0034). Health and reflection answer
 * without a token; each answer is cheap (health comes from the monitor's cache), but a flood
 * of them still takes the event loop from the leads. So, per peer address, unauthenticated
 * calls draw from a token bucket (a monitor polling every second, or a load balancer's checks,
 * use a fraction of it), and Health/Watch streams are capped per connection, per peer address
 * and in total: a well-behaved monitor watches a handful of services, not thousands.
 * A refusal is RESOURCE_EXHAUSTED, written from the headers, before connect-node runs, and held
 * for 1-1.5 s first: a flood is a loop that waits for each answer, so a slow refusal slows the
 * loop itself (64 concurrent callers then make 64 calls a second, not thousands), where a fast
 * one only invited the next call. An address holds at most 64 refusals so; past that, its
 * refusal is immediate and its connection is closed.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { refuse } from "../../shared/rpc/header-gate.js";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

export interface UnauthenticatedLimits {
  /** Unauthenticated calls one peer address may start per second, on average. */
  callsPerPeerPerSecond: number;
  /** Calls a peer address may start at once after a quiet spell. */
  callBurstPerPeer: number;
  /** Open Health/Watch streams on one connection. */
  watchesPerConnection: number;
  /** Open Health/Watch streams from one peer address. */
  watchesPerPeer: number;
  /** Open Health/Watch streams in all. */
  watchesTotal: number;
}

/**
 * How long a refusal is held (at least, and the spread above it), and how many one address may
 * have held at once. The spread keeps a flood's loops from falling into step: refusals held
 * exactly a second came back together, and so did the loops' next calls, a burst of 64 every
 * second that a lead's call could land behind.
 */
const REFUSAL_HOLD_MS = 1_000;
const REFUSAL_HOLD_SPREAD_MS = 500;
const HELD_REFUSALS_PER_PEER = 64;

export const DEFAULT_UNAUTHENTICATED_LIMITS: UnauthenticatedLimits = {
  callsPerPeerPerSecond: 20,
  callBurstPerPeer: 40,
  watchesPerConnection: 8,
  watchesPerPeer: 32,
  watchesTotal: 256,
};

const WATCH_PATH = "/grpc.health.v1.Health/Watch";

interface Bucket {
  tokens: number;
  at: number;
}

export class UnauthenticatedBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly watchesByPeer = new Map<string, number>();
  private readonly watchesByConnection = new WeakMap<object, number>();
  private readonly heldByPeer = new Map<string, number>();
  private watches = 0;
  private refused = 0;

  constructor(
    private readonly limits: UnauthenticatedLimits = DEFAULT_UNAUTHENTICATED_LIMITS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Open Watch streams now, and calls refused so far (for /metrics and tests). */
  counts(): { watches: number; refused: number } {
    return { watches: this.watches, refused: this.refused };
  }

  /**
   * Admits one unauthenticated call, or answers RESOURCE_EXHAUSTED and returns false. An admitted
   * Watch stream holds its place until its response closes.
   */
  admit(req: Req, res: Res): boolean {
    const peer = req.socket?.remoteAddress ?? "?";
    if (!this.take(peer))
      return this.refuse(req, res, peer, "too many unauthenticated calls from this address; slow down");
    if ((req.url ?? "").split("?")[0] !== WATCH_PATH) return true;
    // The connection is the HTTP/2 session when there is one, else the socket.
    const connection: object = (req as Http2ServerRequest).stream?.session ?? req.socket;
    const onConnection = this.watchesByConnection.get(connection) ?? 0;
    const onPeer = this.watchesByPeer.get(peer) ?? 0;
    if (onConnection >= this.limits.watchesPerConnection)
      return this.refuse(req, res, peer, "too many Health/Watch streams on this connection");
    if (onPeer >= this.limits.watchesPerPeer)
      return this.refuse(req, res, peer, "too many Health/Watch streams from this address");
    if (this.watches >= this.limits.watchesTotal)
      return this.refuse(req, res, peer, "too many Health/Watch streams open on this controller");
    this.watches++;
    this.watchesByPeer.set(peer, onPeer + 1);
    this.watchesByConnection.set(connection, onConnection + 1);
    res.once("close", () => {
      this.watches--;
      const peerLeft = (this.watchesByPeer.get(peer) ?? 1) - 1;
      if (peerLeft > 0) this.watchesByPeer.set(peer, peerLeft);
      else this.watchesByPeer.delete(peer);
      this.watchesByConnection.set(connection, (this.watchesByConnection.get(connection) ?? 1) - 1);
    });
    return true;
  }

  private take(peer: string): boolean {
    const t = this.now();
    const { callsPerPeerPerSecond: rate, callBurstPerPeer: burst } = this.limits;
    const b = this.buckets.get(peer) ?? { tokens: burst, at: t };
    b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * rate);
    b.at = t;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    this.buckets.set(peer, b);
    // A full bucket says nothing a new one would not: the map holds only addresses seen lately.
    if (this.buckets.size > 4096) this.forgetFull(t);
    return true;
  }

  private forgetFull(t: number): void {
    const { callsPerPeerPerSecond: rate, callBurstPerPeer: burst } = this.limits;
    for (const [peer, b] of this.buckets) if (b.tokens + ((t - b.at) / 1000) * rate >= burst) this.buckets.delete(peer);
    // Addresses from a whole network at once: forget them all rather than grow without bound.
    if (this.buckets.size > 4096) this.buckets.clear();
  }

  private refuse(req: Req, res: Res, peer: string, message: string): false {
    this.refused++;
    const answer = () =>
      refuse(req, res, {
        grpcStatus: 8,
        httpStatus: 429,
        code: "resource_exhausted",
        message,
        headers: { "retry-after": "1" },
      });
    const held = this.heldByPeer.get(peer) ?? 0;
    if (held >= HELD_REFUSALS_PER_PEER) {
      answer();
      closeConnection(req);
      return false;
    }
    this.heldByPeer.set(peer, held + 1);
    const timer = setTimeout(answer, REFUSAL_HOLD_MS + Math.random() * REFUSAL_HOLD_SPREAD_MS);
    res.once("close", () => {
      clearTimeout(timer);
      const left = (this.heldByPeer.get(peer) ?? 1) - 1;
      if (left > 0) this.heldByPeer.set(peer, left);
      else this.heldByPeer.delete(peer);
    });
    return false;
  }
}

/** Ends the connection a request came on: GOAWAY for HTTP/2, a close after the answer for HTTP/1.1. */
function closeConnection(req: Req): void {
  const session = (req as Http2ServerRequest).stream?.session;
  if (session) {
    if (!session.closed) session.close();
    return;
  }
  (req as IncomingMessage).socket.end();
}
