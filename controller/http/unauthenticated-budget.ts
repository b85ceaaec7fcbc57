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
import type { Http2ServerRequest, Http2ServerResponse, IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { refuse, refuseStream, type Refusal } from "../../shared/rpc/header-gate.js";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** What the budget decides of an HTTP/2 stream before any request object is built for it. */
export type StreamVerdict = "pass" | "answered" | "close";

/** One unauthenticated call as the budget sees it, over HTTP/1.1 (request objects) or HTTP/2 (the raw stream). */
interface Call {
  peer: string;
  /** The HTTP/2 session when there is one, else the socket. */
  connection: object;
  path: string;
  answer(r: Refusal): void;
  onClose(fn: () => void): void;
}

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
   * Admits one unauthenticated HTTP/1.1 call, or answers RESOURCE_EXHAUSTED and returns false. An
   * admitted Watch stream holds its place until its response closes.
   */
  admit(req: Req, res: Res): boolean {
    const call: Call = {
      peer: req.socket?.remoteAddress ?? "?",
      connection: (req as Http2ServerRequest).stream?.session ?? req.socket,
      path: (req.url ?? "").split("?")[0] ?? "",
      answer: (r) => refuse(req, res, r),
      onClose: (fn) => res.once("close", fn),
    };
    const verdict = this.judge(call);
    if (verdict === "close") closeConnection(req);
    return verdict === "pass";
  }

  /**
   * The same for an HTTP/2 stream, judged on its raw stream and headers before the compat layer
   * builds a request and a response for it (h2-session-guard.ts): a refused stream costs one
   * HEADERS frame. "close" means refused, and its session is to be closed (the guard does that).
   */
  screen(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): StreamVerdict {
    const type = String(headers["content-type"] ?? "");
    return this.judge({
      peer: stream.session?.socket?.remoteAddress ?? "?",
      connection: stream.session ?? stream,
      path: String(headers[":path"] ?? "").split("?")[0] ?? "",
      answer: (r) => refuseStream(stream, type, r),
      onClose: (fn) => stream.once("close", fn),
    });
  }

  private judge(c: Call): StreamVerdict {
    const { peer, connection } = c;
    if (!this.take(peer)) return this.refuse(c, "too many unauthenticated calls from this address; slow down");
    if (c.path !== WATCH_PATH) return "pass";
    const onConnection = this.watchesByConnection.get(connection) ?? 0;
    const onPeer = this.watchesByPeer.get(peer) ?? 0;
    if (onConnection >= this.limits.watchesPerConnection)
      return this.refuse(c, "too many Health/Watch streams on this connection");
    if (onPeer >= this.limits.watchesPerPeer) return this.refuse(c, "too many Health/Watch streams from this address");
    if (this.watches >= this.limits.watchesTotal)
      return this.refuse(c, "too many Health/Watch streams open on this controller");
    this.watches++;
    this.watchesByPeer.set(peer, onPeer + 1);
    this.watchesByConnection.set(connection, onConnection + 1);
    c.onClose(() => {
      this.watches--;
      const peerLeft = (this.watchesByPeer.get(peer) ?? 1) - 1;
      if (peerLeft > 0) this.watchesByPeer.set(peer, peerLeft);
      else this.watchesByPeer.delete(peer);
      this.watchesByConnection.set(connection, (this.watchesByConnection.get(connection) ?? 1) - 1);
    });
    return "pass";
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

  /** Counts a refusal and answers it after the hold, or at once with "close" when the address holds its fill. */
  private refuse(c: Call, message: string): "answered" | "close" {
    this.refused++;
    const r: Refusal = {
      grpcStatus: 8,
      httpStatus: 429,
      code: "resource_exhausted",
      message,
      headers: { "retry-after": "1" },
    };
    const held = this.heldByPeer.get(c.peer) ?? 0;
    if (held >= HELD_REFUSALS_PER_PEER) {
      c.answer(r);
      return "close";
    }
    this.heldByPeer.set(c.peer, held + 1);
    const timer = setTimeout(() => c.answer(r), REFUSAL_HOLD_MS + Math.random() * REFUSAL_HOLD_SPREAD_MS);
    c.onClose(() => {
      clearTimeout(timer);
      const left = (this.heldByPeer.get(c.peer) ?? 1) - 1;
      if (left > 0) this.heldByPeer.set(c.peer, left);
      else this.heldByPeer.delete(c.peer);
    });
    return "answered";
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
