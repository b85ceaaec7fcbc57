/**
 * HTTP/2 abuse is bounded per connection (issue 32, CVE-2023-44487, ADR 0034). nghttp2's own
 * rapid-reset limit sends GOAWAY but still hands every stream already buffered to the
 * application, so the work an attack queued in its first few reads was done anyway. Here each
 * session draws from two token buckets, and a session that empties one is destroyed at once:
 *
 * - unfinished streams: every stream the peer opens takes a token and returns it when the
 *   stream ends normally. A peer that resets its streams (rapid reset) or opens them faster
 *   than it lets them finish runs dry; one that makes thousands of complete calls never does.
 * - frames that need no answer: PING and SETTINGS, which a client sends a few of per
 *   connection, not hundreds per second.
 *
 * A stream reaches a handler only after the reads it came in are parsed, so one reset in the
 * same packets never does (`watch`). And an address whose session was closed for abuse has its
 * next HTTP/2 connections held unread for a while (`whenUnheld`): an attacker that reconnects at
 * once would otherwise make the controller parse a new session's first reads, hundreds of
 * streams, many times a second.
 */
import {
  constants,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";

export interface H2SessionLimits {
  /** Streams a session may leave unfinished (reset or still open) before it is closed. */
  unfinishedStreamBurst: number;
  /** Unfinished streams forgiven per second. */
  unfinishedStreamsPerSecond: number;
  /** PING and SETTINGS frames a session may send at once. */
  idleFrameBurst: number;
  /** PING and SETTINGS frames forgiven per second. */
  idleFramesPerSecond: number;
  /** After a session is closed for abuse, new HTTP/2 connections from its address wait unread this long. */
  abuseHoldMs: number;
}

export const DEFAULT_H2_SESSION_LIMITS: H2SessionLimits = {
  unfinishedStreamBurst: 256,
  unfinishedStreamsPerSecond: 64,
  idleFrameBurst: 32,
  idleFramesPerSecond: 4,
  abuseHoldMs: 10_000,
};

/** Addresses remembered as abusers at most; past that the oldest is forgotten first. */
const MAX_HELD_ADDRESSES = 4_096;
/** Between two held connections handed over (the first read of each is parsed whole, at once). */
const HANDOVER_GAP_MS = 100;

class Budget {
  private tokens: number;
  private at = performance.now();
  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
  ) {
    this.tokens = burst;
  }
  take(): boolean {
    const t = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.at) / 1000) * this.perSecond);
    this.at = t;
    this.tokens -= 1;
    return this.tokens >= 0;
  }
  give(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }
}

/** Judges a stream before any request object is built: "answered" and "close" mean it was refused. */
export type StreamScreen = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => "pass" | "answered" | "close";

type StreamListener = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => void;

interface Pending {
  stream: ServerHttp2Stream;
  headers: IncomingHttpHeaders;
  flags: number;
  rawHeaders: string[];
}

interface Guarded {
  peer: string;
  streams: Budget;
  frames: Budget;
}

export class H2SessionGuard {
  private readonly sessions = new WeakMap<Http2Session, Guarded>();
  /** Peer address → when (performance.now()) its hold ends; insertion order is age order. */
  private readonly held = new Map<string, number>();
  /** Peer address → its connections waiting unread for a hold to end, oldest first. */
  private readonly waiting = new Map<string, (() => boolean)[]>();
  /** When a held connection of any address was last handed over: the holds of a flood's addresses end together. */
  private lastHandOver = Number.NEGATIVE_INFINITY;
  private closedSessions = 0;
  private admitted = 0;
  private seen = 0;

  constructor(private readonly limits: H2SessionLimits = DEFAULT_H2_SESSION_LIMITS) {}

  /** Sessions closed for abuse, streams opened by peers and streams handed to a handler, so far (tests, /metrics). */
  counts(): { h2Abuse: number; h2StreamsOpened: number; h2StreamsAdmitted: number } {
    return { h2Abuse: this.closedSessions, h2StreamsOpened: this.seen, h2StreamsAdmitted: this.admitted };
  }

  /**
   * Guards `server`'s sessions, and takes over its "stream" event: the compat layer's listener
   * (which makes the request and response objects and emits "request") gets a stream only if
   * its session's budget allows, and only after the reads of this turn of the event loop are
   * all parsed. A stream reset in those same reads (CVE-2023-44487's pattern: HEADERS and
   * RST_STREAM together, hundreds per packet) is destroyed by then, and nothing is built for it.
   * `screen` judges each stream on its raw headers first (the unauthenticated budget): a stream
   * it answered gets nothing more (issue 32's Watch flood sent 125 streams per connection, and
   * each was built into request objects only to be refused), and "close" closes its session
   * gracefully (what was admitted finishes) and holds its address as for abuse.
   */
  watch(server: Http2Server, screen?: StreamScreen): void {
    const handlers = server.listeners("stream") as StreamListener[];
    server.removeAllListeners("stream");
    server.on("session", (session: Http2Session) => {
      const l = this.limits;
      const g: Guarded = {
        peer: session.socket?.remoteAddress ?? "?",
        streams: new Budget(l.unfinishedStreamBurst, l.unfinishedStreamsPerSecond),
        frames: new Budget(l.idleFrameBurst, l.idleFramesPerSecond),
      };
      this.sessions.set(session, g);
      const frame = () => {
        if (!g.frames.take()) this.condemn(session);
      };
      session.on("ping", frame);
      session.on("remoteSettings", frame);
    });
    let pending: Pending[] = [];
    const handOver = () => {
      const batch = pending;
      pending = [];
      for (const p of batch) {
        const session = p.stream.session;
        if (p.stream.destroyed || !session || session.destroyed) continue;
        const verdict = screen?.(p.stream, p.headers) ?? "pass";
        if (verdict === "close") this.closeOverBudget(session);
        if (verdict !== "pass") continue;
        this.admitted++;
        for (const h of handlers) h.call(server, p.stream, p.headers, p.flags, p.rawHeaders);
      }
    };
    server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, raw: string[]) => {
      this.seen++;
      // A peer's reset (any code but CANCEL is an error) before a handler takes the stream, or
      // while the screen holds its refusal, must not surface as an uncaught exception.
      stream.on("error", ignore);
      if (!this.takes(stream)) return;
      if (pending.length === 0) setImmediate(handOver);
      pending.push({ stream, headers, flags, rawHeaders: raw });
    });
  }

  /**
   * Calls `handOver` for a new HTTP/2 connection from `peer` at once, or, while that address is
   * held (a session of it closed for abuse or over its unauthenticated budget within
   * `abuseHoldMs`), once it is no longer held; until then the connection's bytes stay unread.
   * Held connections are handed over one at a time, `HANDOVER_GAP_MS` apart whatever their
   * address (a flood's addresses are held together, so their holds end together), each when its
   * address is not held at its turn: parsing a connection's first read costs ~50 µs a
   * stream before any handler, and the Watch flood's 15 later connections per address, handed
   * over together when the first hold ended, were ~1,900 streams parsed at once, only to trip the
   * budget again. `handOver` returns false when it had nothing to do (the socket is gone), and
   * the next one goes at once. A client behind an address that keeps abusing waits as long as
   * the abuse goes on: the address is what the budget and the hold know of a caller.
   */
  whenUnheld(peer: string | undefined, handOver: () => boolean): void {
    const key = peer ?? "?";
    const queue = this.waiting.get(key);
    if (queue) {
      queue.push(handOver);
      return;
    }
    if (this.holdFor(key) === 0) {
      handOver();
      return;
    }
    this.waiting.set(key, [handOver]);
    this.drain(key);
  }

  /** Hands over the address's next waiting connection when it is not held, then the rest, a gap apart. */
  private drain(key: string): void {
    const queue = this.waiting.get(key);
    if (!queue) return;
    const wait = Math.max(this.holdFor(key), this.lastHandOver + HANDOVER_GAP_MS - performance.now());
    if (wait > 0) {
      setTimeout(() => this.drain(key), wait).unref();
      return;
    }
    for (let next = queue.shift(); next; next = queue.shift()) {
      if (!next()) continue;
      this.lastHandOver = performance.now();
      if (queue.length > 0) {
        setTimeout(() => this.drain(key), HANDOVER_GAP_MS).unref();
        return;
      }
    }
    this.waiting.delete(key);
  }

  /** How long `peer`'s hold has to run, 0 when it has none. */
  private holdFor(key: string): number {
    const until = this.held.get(key);
    if (until === undefined) return 0;
    const wait = until - performance.now();
    if (wait > 0) return wait;
    this.held.delete(key);
    return 0;
  }

  /**
   * Judges an HTTP/2 connection's first read before any of it is parsed: Node parses all of it
   * in one go when the session starts, before the guard sees a single stream, and an attacker's
   * first 64 KB hold ~1,800 HEADERS + RST_STREAM pairs. A first read with more RST_STREAM
   * frames than a client ever sends at once (it would cancel calls it began microseconds ago),
   * more HEADERS than the session may hold open, or more PING and SETTINGS than the frame
   * budget, is abuse: true, counted, and its address held as for a session closed for abuse.
   */
  refusesFirstRead(peer: string | undefined, chunk: Buffer): boolean {
    const f = countFrames(chunk);
    const l = this.limits;
    if (f.resets <= FIRST_READ_RESETS && f.headers <= l.unfinishedStreamBurst && f.idle <= l.idleFrameBurst)
      return false;
    this.closedSessions++;
    this.hold(peer ?? "?");
    return true;
  }

  /**
   * Counts a new stream against its session's budget; false when the session is closed or has
   * just been closed for abuse. A stream that ends normally gives its token back; one reset,
   * by either side, keeps it spent.
   */
  private takes(stream: ServerHttp2Stream): boolean {
    const session = stream.session;
    if (!session || session.destroyed) return false;
    const g = this.sessions.get(session);
    if (!g) return !stream.destroyed;
    if (!g.streams.take()) {
      this.condemn(session);
      return false;
    }
    stream.once("close", () => {
      if (stream.rstCode === constants.NGHTTP2_NO_ERROR) g.streams.give();
    });
    return true;
  }

  private condemn(session: Http2Session): void {
    if (session.destroyed) return;
    this.closedSessions++;
    const peer = this.sessions.get(session)?.peer;
    if (peer !== undefined) this.hold(peer);
    // GOAWAY says why; destroying the session now drops the frames still buffered unread.
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.destroy();
  }

  /** The budget refused a session's caller past its fill: no more of its streams, and its address waits. */
  private closeOverBudget(session: Http2Session): void {
    if (session.closed) return;
    const peer = this.sessions.get(session)?.peer;
    if (peer !== undefined) this.hold(peer);
    session.close();
  }

  private hold(peer: string): void {
    if (this.limits.abuseHoldMs <= 0) return;
    this.held.delete(peer);
    if (this.held.size >= MAX_HELD_ADDRESSES) this.held.delete(this.held.keys().next().value!);
    this.held.set(peer, performance.now() + this.limits.abuseHoldMs);
  }
}

const ignore = () => {};

/** RST_STREAM frames a connection's first read may carry; a client cancels a call it began, not dozens. */
const FIRST_READ_RESETS = 32;
/** "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", then frames: a 9-byte header (length 24 bits, type, flags, stream id). */
const PREFACE_BYTES = 24;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const PING = 0x6;

/** The frames of each kind among the complete frame headers in a connection's first read. */
function countFrames(chunk: Buffer): { headers: number; resets: number; idle: number } {
  const n = { headers: 0, resets: 0, idle: 0 };
  for (let at = PREFACE_BYTES; at + 9 <= chunk.length; at += 9 + chunk.readUIntBE(at, 3)) {
    const type = chunk[at + 3];
    if (type === HEADERS) n.headers++;
    else if (type === RST_STREAM) n.resets++;
    else if (type === SETTINGS || type === PING) n.idle++;
  }
  return n;
}
