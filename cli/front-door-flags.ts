/**
 * The front door's limits as flags of `clankie up` and `clankie controller` (ADR 0034): an
 * operator behind a NAT or a load balancer that funnels many clients through one address
 * raises the per-address limits; the defaults suit a fleet's leads and monitors.
 */
import { Option, type Command } from "commander";
import {
  DEFAULT_LISTENER_LIMITS,
  type ListenerLimits,
  DEFAULT_UNAUTHENTICATED_LIMITS,
  type UnauthenticatedLimits,
} from "../controller/for-cli.js";

export interface FrontDoorFlags {
  maxConnections?: number | undefined;
  maxConnectionsPerPeer?: number | undefined;
  maxUnprovenPerPeer?: number | undefined;
  headersTimeoutMs?: number | undefined;
  maxWatchStreams?: number | undefined;
  maxWatchStreamsPerPeer?: number | undefined;
  unauthenticatedRate?: number | undefined;
  abuseHoldMs?: number | undefined;
}

function positiveInt(flag: string): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1)
      throw new Error(`${flag} takes a whole number of at least 1, got ${JSON.stringify(v.slice(0, 100))}`);
    return n;
  };
}

export function addFrontDoorOptions(cmd: Command): Command {
  const L = DEFAULT_LISTENER_LIMITS;
  const U = DEFAULT_UNAUTHENTICATED_LIMITS;
  const options: [string, string, number][] = [
    [
      "--max-connections <n>",
      "open connections in all; when full, one that never sent a complete request gives way",
      L.maxConnections,
    ],
    ["--max-connections-per-peer <n>", "open connections one peer address may hold", L.maxConnectionsPerPeer],
    [
      "--max-unproven-per-peer <n>",
      "connections one address may hold before they send a complete request",
      L.maxUnprovenPerPeer,
    ],
    [
      "--headers-timeout-ms <ms>",
      "time for a connection's first byte and for a request's complete headers",
      L.headersTimeoutMs,
    ],
    ["--max-watch-streams <n>", "open unauthenticated Health/Watch streams in all", U.watchesTotal],
    ["--max-watch-streams-per-peer <n>", "open Health/Watch streams from one address", U.watchesPerPeer],
    [
      "--unauthenticated-rate <n>",
      "calls without a token (health, reflection) one address may make per second",
      U.callsPerPeerPerSecond,
    ],
    [
      "--abuse-hold-ms <ms>",
      "after a connection is closed for HTTP/2 abuse or an overflowed budget, how long its address's new ones wait unread",
      L.h2.abuseHoldMs,
    ],
  ];
  for (const [flags, description, fallback] of options) {
    cmd.addOption(
      new Option(flags, description)
        .argParser(positiveInt(flags.split(" ")[0]!))
        .default(fallback)
        .helpGroup("Front door (ADR 0034):"),
    );
  }
  return cmd;
}

export function frontDoorLimits(f: FrontDoorFlags): {
  listenerLimits: Partial<ListenerLimits>;
  unauthenticatedLimits: Partial<UnauthenticatedLimits>;
} {
  const listenerLimits: Partial<ListenerLimits> = {};
  if (f.maxConnections !== undefined) listenerLimits.maxConnections = f.maxConnections;
  if (f.maxConnectionsPerPeer !== undefined) listenerLimits.maxConnectionsPerPeer = f.maxConnectionsPerPeer;
  if (f.maxUnprovenPerPeer !== undefined) listenerLimits.maxUnprovenPerPeer = f.maxUnprovenPerPeer;
  if (f.headersTimeoutMs !== undefined) listenerLimits.headersTimeoutMs = f.headersTimeoutMs;
  if (f.abuseHoldMs !== undefined) listenerLimits.h2 = { ...DEFAULT_LISTENER_LIMITS.h2, abuseHoldMs: f.abuseHoldMs };
  const unauthenticatedLimits: Partial<UnauthenticatedLimits> = {};
  if (f.maxWatchStreams !== undefined) unauthenticatedLimits.watchesTotal = f.maxWatchStreams;
  if (f.maxWatchStreamsPerPeer !== undefined) unauthenticatedLimits.watchesPerPeer = f.maxWatchStreamsPerPeer;
  if (f.unauthenticatedRate !== undefined) {
    unauthenticatedLimits.callsPerPeerPerSecond = f.unauthenticatedRate;
    unauthenticatedLimits.callBurstPerPeer = f.unauthenticatedRate * 2;
  }
  return { listenerLimits, unauthenticatedLimits };
}

/** The front-door flags out of a command's parsed options. */
export function frontDoorFlagsOf(o: FrontDoorFlags): FrontDoorFlags {
  const {
    maxConnections,
    maxConnectionsPerPeer,
    maxUnprovenPerPeer,
    headersTimeoutMs,
    maxWatchStreams,
    maxWatchStreamsPerPeer,
    unauthenticatedRate,
    abuseHoldMs,
  } = o;
  return {
    maxConnections,
    maxConnectionsPerPeer,
    maxUnprovenPerPeer,
    headersTimeoutMs,
    maxWatchStreams,
    maxWatchStreamsPerPeer,
    unauthenticatedRate,
    abuseHoldMs,
  };
}
