/**
 * Round trips of the HTTP/2 sessions the controller opens to this agent, measured with PING
 * frames (answered by the controller's HTTP/2 stack, not its application code). The freshness
 * gate adds a bound on a request's transit to the controller's stated authority age; a fixed
 * constant is either too generous on loopback or not conservative at all across a WAN, so the
 * bound is the link's own recent worst round trip (a one-way transit is at most that), never
 * below a floor, and a generous default until the first PING has come back. A PING that looks
 * slow (the session's first, or twice its fastest kept sample) is confirmed by a second at once and
 * the sample is the smaller of the two, so a single stall is not taken for the link's round trip.
 * Samples belong to the session they were taken on, and a call is bounded by its own session's:
 * a link the agent has left (a relink through another route, a controller restart) says nothing
 * of the one a request came on, and its slower round trips kept the bound high for 20 s after.
 * A slow sample also ages out within a second once a newer one exists, and a slow sample makes
 * the next PING go out within 250 ms instead of the interval: an attack that stalled the
 * controller for a while ends with the bound back at the link's own within about a second
 * (issue 32: it kept refusing every delivery `proof_stale` for 15-28 s after one).
 * The controller's own liveness PINGs (every ~3 s) carry the round trip it measured on the one before
 * (shared/link-ping-payload.ts), and that is a sample too: the agent sends a PING of its own only
 * for a session's first sample, to confirm or recheck a slow one, and when no sample came for an
 * interval (a controller that sends none). Its own PINGs every 5 s woke the controller once per
 * agent and interval, each at its own moment: most of the PINGs' idle cost at 1,000 agents (issue 36).
 * A reported round trip counts as slow only past `reportSlowMs`: the controller sends a second's
 * PINGs at once and answers the last of them a few ms late, and confirming every such report with
 * a PING of the agent's own brought back the stream it replaces, for a bound a few ms lower.
 */
import type { Http2Server, Http2ServerRequest, ServerHttp2Session } from "node:http2";
import { createContextKey, createContextValues, type ContextValues } from "@connectrpc/connect";
import { UNMEASURED_TRANSIT_BOUND_MS } from "../proofs/freshness.js";
import { roundTripOf } from "../../shared/link-ping-payload.js";

/** The HTTP/2 session a call arrived on, in its handler context (set by `linkContextValues`). */
export const LINK_SESSION = createContextKey<object | undefined>(undefined, {
  description: "the HTTP/2 session the call arrived on",
});

/** A call's starting context values: its link session (none over HTTP/1). Connect's `contextValues` option. */
export function linkContextValues(req: object): ContextValues {
  return createContextValues().set(
    LINK_SESSION,
    (req as Partial<Pick<Http2ServerRequest, "stream">>).stream?.session ?? undefined,
  );
}

export const TRANSIT_FLOOR_MS = 2;

export interface LinkRoundTripsOptions {
  intervalMs?: number;
  /** How many recent samples of one session the bound covers. */
  keep?: number;
  /** A sample older than this counts only while it is the session's newest. */
  maxAgeMs?: number;
  /** After a slow sample (twice the session's fastest kept one), the next PING goes out this soon. */
  recheckMs?: number;
  /** A round trip the controller reports is slow (confirmed, rechecked) only past this. */
  reportSlowMs?: number;
}

interface Sample {
  ms: number;
  at: number;
}

export class LinkRoundTrips {
  // The live sessions' recent samples; a session leaves with its close.
  private readonly bySession = new Map<object, Sample[]>();
  private readonly intervalMs: number;
  private readonly keep: number;
  private readonly maxAgeMs: number;
  private readonly recheckMs: number;
  private readonly reportSlowMs: number;

  constructor(o: LinkRoundTripsOptions = {}) {
    this.intervalMs = o.intervalMs ?? 5000;
    this.keep = o.keep ?? 4;
    this.maxAgeMs = o.maxAgeMs ?? 1000;
    this.recheckMs = o.recheckMs ?? 250;
    this.reportSlowMs = o.reportSlowMs ?? 25;
  }

  /** Samples every session of `server` when it opens, then from the controller's PINGs or, without them, every interval. */
  watch(server: Http2Server): void {
    server.on("session", (session: ServerHttp2Session) => {
      this.open(session);
      const ping = () => {
        if (session.destroyed || session.closed) return;
        try {
          session.ping((err, first) => {
            if (!err) confirm(first);
          });
        } catch {
          // Too many outstanding pings, or the session is closing: the next tick tries again.
        }
      };
      // A PING that looks slow is confirmed by a second sent when it returns, and the sample is the
      // smaller: a one-off stall of either event loop (the controller's database work for the heartbeat
      // sent at the same instant, a renewal, startup) delays only the first; a slow link or a loop that
      // stays busy delays both, and still counts (ADR 0010). A fast first stands alone: a second could
      // only lower it, and each PING costs the controller a read and a write on every link (issue 36).
      let recheck: NodeJS.Timeout | undefined;
      const sample = (ms: number, floor = TRANSIT_FLOOR_MS) => {
        this.record(session, ms);
        if (recheck === undefined && this.slow(session, floor)) {
          recheck = setTimeout(() => {
            recheck = undefined;
            ping();
          }, this.recheckMs);
          recheck.unref();
        }
      };
      const confirm = (first: number, floor = TRANSIT_FLOOR_MS) => {
        if (!this.looksSlow(session, first, floor) || session.destroyed || session.closed) return sample(first, floor);
        try {
          session.ping((err, second) => sample(err ? first : Math.min(first, second)));
        } catch {
          sample(first);
        }
      };
      // The first PING goes out once the controller's SETTINGS arrived, before the first request
      // can be judged. Not earlier: on a reverse link (ADR 0021) the agent's session exists while
      // the controller still checks the certificate, and that wait is not the link's round trip.
      session.once("remoteSettings", ping);
      // The controller's PING reports its last round trip on this link: a sample, confirmed like a first.
      session.on("ping", (payload: Buffer) => {
        const ms = roundTripOf(payload);
        if (ms !== undefined && recheck === undefined) confirm(ms, this.reportSlowMs);
      });
      const timer = setInterval(() => {
        if (!this.sampledWithin(session, this.intervalMs)) ping();
      }, this.intervalMs);
      timer.unref();
      session.once("close", () => {
        clearInterval(timer);
        clearTimeout(recheck);
        this.bySession.delete(session);
      });
    });
  }

  /** A session starts with no sample: its calls get the unmeasured bound until its first PING returns. */
  open(session: object): void {
    if (!this.bySession.has(session)) this.bySession.set(session, []);
  }

  /** One sample of a live session's round trip; a session already gone keeps none. */
  record(session: object, durationMs: number): void {
    const samples = this.bySession.get(session);
    if (!samples) return;
    samples.push({ ms: durationMs, at: performance.now() });
    if (samples.length > this.keep) samples.shift();
  }

  /** A sample of the session was taken in the last `ms`. */
  private sampledWithin(session: object, ms: number): boolean {
    const newest = this.bySession.get(session)?.at(-1);
    return newest !== undefined && performance.now() - newest.at < ms;
  }

  /** The session's newest sample is twice its fastest kept one: the link or a peer is disturbed. */
  private slow(session: object, floor: number): boolean {
    const samples = this.bySession.get(session) ?? [];
    return this.slowAgainst(samples, samples.at(-1)?.ms ?? 0, floor);
  }

  /** A round trip the session's kept samples would call slow, or the session's first (nothing to judge it by). */
  private looksSlow(session: object, ms: number, floor: number): boolean {
    const samples = this.bySession.get(session) ?? [];
    return samples.length === 0 || this.slowAgainst(samples, ms, floor);
  }

  private slowAgainst(samples: Sample[], ms: number, floor: number): boolean {
    return ms > floor && ms > 2 * Math.min(...samples.map((x) => x.ms));
  }

  /**
   * The transit bound for a request arriving now on `session`. Without one (a call that did not
   * come over a watched link), the worst of the live sessions', an unmeasured one counting as
   * the unmeasured default.
   */
  transitBoundMs(session?: object): number {
    const now = performance.now();
    if (session !== undefined && this.bySession.has(session)) return this.boundOf(this.bySession.get(session)!, now);
    let worst: number | undefined;
    for (const samples of this.bySession.values()) worst = Math.max(worst ?? 0, this.boundOf(samples, now));
    return worst ?? UNMEASURED_TRANSIT_BOUND_MS;
  }

  // Before the first PING has come back: a bound larger than any link this agent is expected on.
  private boundOf(samples: Sample[], now: number): number {
    if (samples.length === 0) return UNMEASURED_TRANSIT_BOUND_MS;
    const newest = samples[samples.length - 1]!;
    let worst = newest.ms;
    for (const x of samples) if (now - x.at <= this.maxAgeMs) worst = Math.max(worst, x.ms);
    return Math.max(TRANSIT_FLOOR_MS, Math.ceil(worst));
  }
}
