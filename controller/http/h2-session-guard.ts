/**
 * HTTP/2 abuse is bounded per connection (issue 32, CVE-2023-44487, ADR 0034). nghttp2's own
 * rapid-reset limit sends GOAWAY but still hands every stream already buffered to the
 * application, so the work an attack queued in its first few reads was done anyway. Here each
 * session draws from two token buckets, and a session that empties one is destroyed at once,
 * before another of its streams reaches a handler (the request handler asks `admits` first):
 *
 * - unfinished streams: every stream the peer opens takes a token and returns it when the
 *   stream ends normally. A peer that resets its streams (rapid reset) or opens them faster
 *   than it lets them finish runs dry; one that makes thousands of complete calls never does.
 * - frames that need no answer: PING and SETTINGS, which a client sends a few of per
 *   connection, not hundreds per second.
 */
import { constants, type Http2Server, type Http2ServerRequest, type Http2Session } from "node:http2";

export interface H2SessionLimits {
  /** Streams a session may leave unfinished (reset or still open) before it is closed. */
  unfinishedStreamBurst: number;
  /** Unfinished streams forgiven per second. */
  unfinishedStreamsPerSecond: number;
  /** PING and SETTINGS frames a session may send at once. */
  idleFrameBurst: number;
  /** PING and SETTINGS frames forgiven per second. */
  idleFramesPerSecond: number;
}

export const DEFAULT_H2_SESSION_LIMITS: H2SessionLimits = {
  unfinishedStreamBurst: 256,
  unfinishedStreamsPerSecond: 64,
  idleFrameBurst: 32,
  idleFramesPerSecond: 4,
};

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
  empty(): boolean {
    return this.tokens < 0;
  }
}

interface Guarded {
  streams: Budget;
  frames: Budget;
}

export class H2SessionGuard {
  private readonly sessions = new WeakMap<Http2Session, Guarded>();
  private closedSessions = 0;
  private admitted = 0;

  constructor(private readonly limits: H2SessionLimits = DEFAULT_H2_SESSION_LIMITS) {}

  /** Sessions closed for abuse, and streams handed to a handler, so far (for tests and /metrics). */
  counts(): { h2Abuse: number; h2StreamsAdmitted: number } {
    return { h2Abuse: this.closedSessions, h2StreamsAdmitted: this.admitted };
  }

  watch(server: Http2Server): void {
    server.on("session", (session: Http2Session) => {
      const l = this.limits;
      const g: Guarded = {
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
  }

  /**
   * Counts a new stream of an HTTP/2 request; false when its session is closed or has just
   * been closed for abuse, and then nothing may be done for the request.
   */
  admits(req: Http2ServerRequest): boolean {
    const stream = req.stream;
    const session = stream.session;
    if (!session || session.destroyed) return false;
    const g = this.sessions.get(session);
    if (!g) return !stream.destroyed;
    // A stream reset in the same read as its HEADERS arrives here already closed: it did no work
    // but its creation, and it is the rapid-reset pattern itself, so it spends a token for good.
    if (!g.streams.take() || stream.destroyed) {
      if (g.streams.empty()) this.condemn(session);
      return false;
    }
    this.admitted++;
    stream.once("close", () => {
      if (stream.rstCode === constants.NGHTTP2_NO_ERROR) g.streams.give();
    });
    return true;
  }

  private condemn(session: Http2Session): void {
    if (session.destroyed) return;
    this.closedSessions++;
    // GOAWAY says why; destroying the session now drops the frames still buffered unread.
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.destroy();
  }
}
