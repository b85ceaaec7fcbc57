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
 * next HTTP/2 connections held unread for a while (`holdFor`): an attacker that reconnects at
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
   */
  watch(server: Http2Server): void {
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
        if (p.stream.destroyed || !p.stream.session || p.stream.session.destroyed) continue;
        this.admitted++;
        for (const h of handlers) h.call(server, p.stream, p.headers, p.flags, p.rawHeaders);
      }
    };
    server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, raw: string[]) => {
      this.seen++;
      if (!this.takes(stream)) return;
      if (pending.length === 0) setImmediate(handOver);
      pending.push({ stream, headers, flags, rawHeaders: raw });
    });
  }

  /**
   * How long a new HTTP/2 connection from `peer` must wait unread: until `abuseHoldMs` after
   * that address's last session closed for abuse, else 0. Connections held together are handed
   * over together when the hold ends, whatever happens then, so a client that shares an
   * abuser's address waits at most one hold and is never starved.
   */
  holdFor(peer: string | undefined): number {
    const until = this.held.get(peer ?? "?");
    if (until === undefined) return 0;
    const wait = until - performance.now();
    if (wait <= 0) this.held.delete(peer ?? "?");
    return Math.max(0, wait);
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

  private hold(peer: string): void {
    if (this.limits.abuseHoldMs <= 0) return;
    this.held.delete(peer);
    if (this.held.size >= MAX_HELD_ADDRESSES) this.held.delete(this.held.keys().next().value!);
    this.held.set(peer, performance.now() + this.limits.abuseHoldMs);
  }
}

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
