/**
 * Round trips of the HTTP/2 sessions the controller opens to this agent, measured with PING
 * frames (answered by the controller's HTTP/2 stack, not its application code). The freshness
 * gate adds a bound on a request's transit to the controller's stated authority age; a fixed
 * constant is either too generous on loopback or not conservative at all across a WAN, so the
 * bound is the link's own recent worst round trip (a one-way transit is at most that), never
 * below a floor, and a generous default until the first PING has come back. A sample is the
 * smaller of two consecutive PINGs, so a single stall is not taken for the link's round trip.
 */
import type { Http2Server, ServerHttp2Session } from "node:http2";
import { UNMEASURED_TRANSIT_BOUND_MS } from "../proofs/freshness.js";

export const TRANSIT_FLOOR_MS = 2;

export interface LinkRoundTripsOptions {
  intervalMs?: number;
  /** How many recent samples the bound covers (across sessions). */
  keep?: number;
}

export class LinkRoundTrips {
  private readonly samples: number[] = [];
  private readonly intervalMs: number;
  private readonly keep: number;

  constructor(o: LinkRoundTripsOptions = {}) {
    this.intervalMs = o.intervalMs ?? 5000;
    this.keep = o.keep ?? 4;
  }

  /** Pings every session of `server` when it opens and then every interval while it lives. */
  watch(server: Http2Server): void {
    server.on("session", (session: ServerHttp2Session) => {
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
      // Each sample is the smaller of two PINGs in a row, the second sent when the first returns.
      // A one-off stall of either event loop (the controller's database work for the heartbeat
      // sent at the same instant, a renewal, startup) delays only the first; a slow link or a
      // loop that stays busy delays both, and still counts (ADR 0010).
      const confirm = (first: number) => {
        if (session.destroyed || session.closed) return this.record(first);
        try {
          session.ping((err, second) => this.record(err ? first : Math.min(first, second)));
        } catch {
          this.record(first);
        }
      };
      // The first PING goes out once the controller's SETTINGS arrived, before the first request
      // can be judged. Not earlier: on a reverse link (ADR 0021) the agent's session exists while
      // the controller still checks the certificate, and that wait is not the link's round trip.
      session.once("remoteSettings", ping);
      const timer = setInterval(ping, this.intervalMs);
      timer.unref();
      session.once("close", () => clearInterval(timer));
    });
  }

  record(durationMs: number): void {
    this.samples.push(durationMs);
    if (this.samples.length > this.keep) this.samples.shift();
  }

  /** The transit bound for a request arriving now. */
  transitBoundMs(): number {
    // Before the first PING has come back: a bound larger than any link this agent is expected on.
    if (this.samples.length === 0) return UNMEASURED_TRANSIT_BOUND_MS;
    return Math.max(TRANSIT_FLOOR_MS, Math.ceil(Math.max(...this.samples)));
  }
}
