/**
 * Issue 32, items 1-3 (ADR 0034): unauthenticated work costs nothing shared.
 * - Health answers from the background probe's cache: a flood of Checks runs no journal
 *   statement, and a caller without a token draws from a per-address budget.
 * - Health/Watch streams are bounded per connection, per address and in total.
 * - An HTTP/2 connection that resets its streams (rapid reset, CVE-2023-44487) is closed before
 *   the frames it already sent reach a handler, and the next lead call is served; a stream
 *   reset in the same packets as its HEADERS never reaches a handler at all; the abuser's
 *   address has its next HTTP/2 connections held unread for a while, another address does not.
 * - Slow header senders give way: with the connection table full of connections that never
 *   sent a complete request, a fresh connection still gets its answer; under the default limits
 *   issue 32's 800 slow senders from 4 addresses are all held, none closed to make room.
 * - /healthz and /readyz answer without a token from what the process holds.
 */
import { constants, type ClientHttp2Session } from "node:http2";
import { connect as netConnect, type Socket } from "node:net";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { DRIVERS, ONCE } from "../kit/test-db.js";
import { DEFAULT_H2_SESSION_LIMITS } from "../../controller/http/h2-session-guard.js";
import { until } from "../kit/until.js";
import { grpcCall, h2 } from "../kit/h2-calls.js";

async function httpGet(
  url: string,
  path: string,
  localAddress = "127.0.0.1",
): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: u.hostname, port: Number(u.port), localAddress }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    });
    let raw = "";
    socket.on("data", (d) => (raw += d.toString()));
    socket.on("end", () =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1] ?? 0), body: raw.split("\r\n\r\n")[1] ?? "" }),
    );
    socket.on("error", reject);
  });
}

describe.each(ONCE)("issue 32: health from the cache, a budget for callers without a token (%s)", (driver) => {
  let fleet: TestFleet;
  const postgresOnly = driver === "postgres";

  beforeAll(async () => {
    fleet = await startFleet(driver, {
      unauthenticatedLimits: { callsPerPeerPerSecond: 20, callBurstPerPeer: 40 },
    });
  });
  afterAll(async () => fleet?.close());

  it.runIf(postgresOnly)(
    "500 unauthenticated health Checks run no journal statement of their own (item 1)",
    async () => {
      const sql = postgres(
        fleet.controller.database.location.replace(/^postgres(ql)?:\/\/[^/]*@/, "postgres://postgres@"),
        { max: 1 },
      );
      const db = new URL(fleet.controller.database.location).pathname.slice(1);
      const transactions = async () => {
        const [row] = await sql<
          { n: string }[]
        >`select xact_commit + xact_rollback as n from pg_stat_database where datname = ${db}`;
        return Number(row!.n);
      };
      try {
        await new Promise((r) => setTimeout(r, 1500));
        const before = await transactions();
        // From 25 loopback addresses, 20 each: every one inside its address's budget, every one answered.
        let answered = 0;
        for (let a = 2; a < 27; a++) {
          const session = await h2(fleet.controller.url, `127.0.0.${a}`);
          const results = await Promise.all(
            Array.from({ length: 20 }, () => grpcCall(session, "/grpc.health.v1.Health/Check")),
          );
          answered += results.filter((r) => r === "answered").length;
          session.close();
        }
        expect(answered).toBe(500);
        // PostgreSQL publishes a backend's counts within a second of its transactions.
        await new Promise((r) => setTimeout(r, 1500));
        const spent = (await transactions()) - before;
        // Heartbeats and the background probe run meanwhile (a few a second); one probe per Check would be 500.
        expect(spent).toBeLessThan(100);
      } finally {
        await sql.end();
      }
    },
  );

  it("a flood of Checks from one address is refused RESOURCE_EXHAUSTED past its budget, slowly, then its connection closed; another address is still served (item 1)", async () => {
    const flood = await h2(fleet.controller.url, "127.0.1.1");
    flood.on("error", () => {});
    const closed = new Promise<void>((resolve) => flood.once("close", resolve));
    const t0 = performance.now();
    const timed = (p: Promise<string>) => p.then((r) => ({ r, ms: performance.now() - t0 }));
    const results = await Promise.all(
      Array.from({ length: 200 }, () => timed(grpcCall(flood, "/grpc.health.v1.Health/Check"))),
    );
    const answered = results.filter((x) => x.r === "answered");
    const refused = results.filter((x) => x.r === "refused");
    // The budget: a burst of 40 and 20 a second.
    expect(answered.length).toBeLessThanOrEqual(60);
    // 64 refusals held for a second each (a flood's loop waits on them), then the rest close the connection.
    expect(refused.length).toBeGreaterThanOrEqual(64);
    expect(refused.filter((x) => x.ms >= 900).length).toBeGreaterThanOrEqual(64);
    await closed;
    const other = await h2(fleet.controller.url, "127.0.1.2");
    expect(await grpcCall(other, "/grpc.health.v1.Health/Check")).toBe("answered");
    other.close();
  });

  it("under the default limits, 800 slow header senders from 4 addresses are all held, none closed to make room, and a fresh connection is answered (item 3)", async () => {
    const u = new URL(fleet.controller.url);
    const before = fleet.controller.frontDoor();
    const slow: Socket[] = [];
    try {
      // 100 at a time, so the kernel's accept queue (511) never drops a SYN into a 1 s retry.
      for (let batch = 0; batch < 8; batch++) {
        const connected = Array.from({ length: 100 }, (_, k) => {
          const socket = netConnect({ host: u.hostname, port: Number(u.port), localAddress: `127.0.5.${1 + (k % 4)}` });
          socket.on("error", () => {});
          slow.push(socket);
          return new Promise<void>((resolve) =>
            socket.once("connect", () => {
              socket.write("POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: ");
              resolve();
            }),
          );
        });
        await Promise.all(connected);
      }
      // Earlier tests' connections may still be closing: count ours from the table's size, and check none closed.
      await until(() => fleet.controller.frontDoor().connections >= 800, "all 800 slow senders in the table");
      const fresh = await httpGet(fleet.controller.url, "/healthz", "127.0.5.1");
      expect(fresh.status).toBe(200);
      expect(fleet.controller.frontDoor().evicted).toBe(before.evicted);
      expect(slow.filter((s) => s.destroyed).length).toBe(0);
    } finally {
      for (const s of slow) s.destroy();
    }
  });

  it("/healthz and /readyz answer without a token from the process's own state (item 1)", async () => {
    const live = await httpGet(fleet.controller.url, "/healthz");
    expect(live.status).toBe(200);
    expect(JSON.parse(live.body)).toEqual({ status: "ok" });
    const ready = await httpGet(fleet.controller.url, "/readyz");
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({
      status: "ready",
      components: { server: "SERVING", database: "SERVING", agents: "SERVING" },
    });
  });
});

/** A shorter hold than the default 10 s, so the test sees it end. */
const ABUSE_HOLD_MS = 3_000;

describe.each(DRIVERS)("issue 32: Watch streams, rapid reset and slow headers (%s)", (driver) => {
  let fleet: TestFleet;
  const sessions: ClientHttp2Session[] = [];
  const sockets: Socket[] = [];

  beforeAll(async () => {
    fleet = await startFleet(driver, {
      unauthenticatedLimits: {
        callsPerPeerPerSecond: 10_000,
        callBurstPerPeer: 10_000,
        watchesPerConnection: 4,
        watchesPerPeer: 6,
        watchesTotal: 8,
      },
      listenerLimits: {
        maxConnections: 48,
        maxUnprovenPerPeer: 64,
        h2: { ...DEFAULT_H2_SESSION_LIMITS, abuseHoldMs: ABUSE_HOLD_MS },
      },
    });
  });
  afterEach(() => {
    for (const s of sessions.splice(0)) s.destroy();
    for (const s of sockets.splice(0)) s.destroy();
  });
  afterAll(async () => fleet?.close());

  it("Health/Watch streams are bounded per connection, per address and in total (item 1)", async () => {
    const watch = async (localAddress: string, n: number) => {
      const session = await h2(fleet.controller.url, localAddress);
      sessions.push(session);
      return Promise.all(Array.from({ length: n }, () => grpcCall(session, "/grpc.health.v1.Health/Watch")));
    };
    const first = await watch("127.0.2.1", 6);
    expect(first.filter((r) => r === "answered").length).toBe(4);
    expect(first.filter((r) => r === "refused").length).toBe(2);
    const samePeer = await watch("127.0.2.1", 4);
    expect(samePeer.filter((r) => r === "answered").length).toBe(2);
    const otherPeer = await watch("127.0.2.2", 4);
    expect(otherPeer.filter((r) => r === "answered").length).toBe(2);
    expect(fleet.controller.frontDoor().watches).toBe(8);
    // Closing streams gives their places back.
    for (const s of sessions.splice(0)) s.destroy();
    await until(() => fleet.controller.frontDoor().watches === 0, "the closed Watch streams released");
    const again = await watch("127.0.2.3", 4);
    expect(again.every((r) => r === "answered")).toBe(true);
  });

  it("a rapid-reset connection is closed before its buffered streams reach a handler, and a lead is served after (item 2)", async () => {
    const before = fleet.controller.frontDoor();
    const attacker = await h2(fleet.controller.url, "127.0.3.1");
    sessions.push(attacker);
    const goaway = new Promise<number | "closed">((resolve) => {
      attacker.once("goaway", (code) => resolve(code));
      attacker.once("close", () => resolve("closed"));
    });
    attacker.on("error", () => {});
    // Streams opened (their handlers start: the headers are complete, the body never comes) and
    // reset a moment later, 100 at a time (under the 128 concurrent streams a session may hold),
    // 2,000 in all. A pair in the same read never reaches a handler (Node drops the stream).
    for (let batch = 0; batch < 20 && !attacker.destroyed; batch++) {
      const open = [];
      for (let i = 0; i < 100 && !attacker.destroyed; i++) {
        const s = attacker.request(
          { ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc" },
          { endStream: false },
        );
        s.on("error", () => {});
        open.push(s);
      }
      await new Promise((r) => setTimeout(r, 20));
      for (const s of open) s.close(constants.NGHTTP2_CANCEL);
    }
    const ended = await goaway;
    if (ended !== "closed") expect(ended).toBe(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    await until(() => fleet.controller.frontDoor().h2Abuse > before.h2Abuse, "the attacking session closed for abuse");
    const handled = fleet.controller.frontDoor().h2StreamsAdmitted - before.h2StreamsAdmitted;
    // The session's budget (256 unfinished streams, 64 forgiven a second), not the 2,000 it sent.
    expect(handled).toBeLessThan(400);
    const lead = await h2(fleet.controller.url);
    sessions.push(lead);
    expect(await grpcCall(lead, "/grpc.health.v1.Health/Check")).toBe("answered");
  });

  it("HEADERS and RST_STREAM sent together (CVE-2023-44487's own pattern) spend the session's budget too, and close it (item 2)", async () => {
    const before = fleet.controller.frontDoor();
    const attacker = await h2(fleet.controller.url, "127.0.3.2");
    sessions.push(attacker);
    attacker.on("error", () => {});
    const closed = new Promise<void>((resolve) => attacker.once("close", resolve));
    for (let i = 0; i < 2000 && !attacker.destroyed; i++) {
      const s = attacker.request({
        ":method": "POST",
        ":path": "/grpc.health.v1.Health/Check",
        "content-type": "application/grpc",
      });
      s.on("error", () => {});
      s.close(constants.NGHTTP2_CANCEL);
      // Let the frames leave in a few writes, as a flood's would.
      if (i % 100 === 99) await new Promise((r) => setImmediate(r));
    }
    await closed;
    await until(
      () => fleet.controller.frontDoor().h2Abuse > before.h2Abuse,
      "the session closed by the guard, not only by nghttp2",
    );
    const lead = await h2(fleet.controller.url);
    sessions.push(lead);
    expect(await grpcCall(lead, "/grpc.health.v1.Health/Check")).toBe("answered");
  });

  it("streams reset in the same packets as their HEADERS never reach a handler, and the session's next call is answered (item 2)", async () => {
    const before = fleet.controller.frontDoor();
    const session = await h2(fleet.controller.url, "127.0.3.5");
    sessions.push(session);
    session.on("error", () => {});
    // A PING answered: the server has parsed the session's first read, so what follows is a later read.
    await new Promise((resolve) => session.ping((err) => resolve(err)));
    // 100 HEADERS + RST_STREAM pairs, written together: within the session's budget of 256 and under the
    // 128 concurrent streams it may open (nghttp2 never sends a stream queued beyond that and reset).
    for (let i = 0; i < 100; i++) {
      const s = session.request(
        { ":method": "POST", ":path": "/grpc.health.v1.Health/Check", "content-type": "application/grpc" },
        { endStream: false },
      );
      s.on("error", () => {});
      s.close(constants.NGHTTP2_CANCEL);
    }
    await until(
      () => fleet.controller.frontDoor().h2StreamsOpened - before.h2StreamsOpened >= 100,
      "the 100 streams seen by the server",
    );
    expect(await grpcCall(session, "/grpc.health.v1.Health/Check")).toBe("answered");
    const after = fleet.controller.frontDoor();
    // Only the last call was handed to a handler; the session was not closed.
    expect(after.h2StreamsAdmitted - before.h2StreamsAdmitted).toBe(1);
    expect(after.h2Abuse).toBe(before.h2Abuse);
  });

  it("a connection whose first read already holds 200 HEADERS + RST_STREAM pairs is closed unread: no stream is opened (item 2)", async () => {
    const before = fleet.controller.frontDoor();
    const u = new URL(fleet.controller.url);
    const frame = (type: number, flags: number, id: number, payload: Buffer) => {
      const head = Buffer.alloc(9);
      head.writeUIntBE(payload.length, 0, 3);
      head[3] = type;
      head[4] = flags;
      head.writeUInt32BE(id, 5);
      return Buffer.concat([head, payload]);
    };
    // HPACK static table: :method POST (3), :scheme http (6), :path / (4).
    const block = Buffer.from([0x83, 0x86, 0x84]);
    const cancel = Buffer.from([0, 0, 0, 8]);
    const parts = [Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"), frame(4, 0, 0, Buffer.alloc(0))];
    for (let id = 1; id < 400; id += 2) parts.push(frame(1, 0x4, id, block), frame(3, 0, id, cancel));
    const socket = netConnect({ host: u.hostname, port: Number(u.port), localAddress: "127.0.3.8" }, () =>
      socket.write(Buffer.concat(parts)),
    );
    sockets.push(socket);
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("close", resolve));
    const after = fleet.controller.frontDoor();
    expect(after.h2Abuse).toBe(before.h2Abuse + 1);
    expect(after.h2StreamsOpened).toBe(before.h2StreamsOpened);
  });

  it("after a session is closed for abuse, its address's next HTTP/2 connection is held unread until the hold ends, while another address is served at once (item 2)", async () => {
    const before = fleet.controller.frontDoor();
    const attacker = await h2(fleet.controller.url, "127.0.3.6");
    sessions.push(attacker);
    attacker.on("error", () => {});
    for (let i = 0; i < 2000 && !attacker.destroyed; i++) {
      const s = attacker.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check" });
      s.on("error", () => {});
      s.close(constants.NGHTTP2_CANCEL);
      if (i % 100 === 99) await new Promise((r) => setImmediate(r));
    }
    await until(() => fleet.controller.frontDoor().h2Abuse > before.h2Abuse, "the attacking session closed");
    const condemnedAt = performance.now();
    // The same address again: TCP connects (the kernel accepts), but nothing is read or answered.
    const again = await h2(fleet.controller.url, "127.0.3.6");
    sessions.push(again);
    const held = grpcCall(again, "/grpc.health.v1.Health/Check");
    const other = await h2(fleet.controller.url, "127.0.3.7");
    sessions.push(other);
    expect(await grpcCall(other, "/grpc.health.v1.Health/Check")).toBe("answered");
    const early = await Promise.race([held, new Promise((r) => setTimeout(() => r("pending"), 500))]);
    // Checked well inside the hold; on a box slow enough to pass it, there is nothing to see.
    if (performance.now() - condemnedAt < ABUSE_HOLD_MS - 500) expect(early).toBe("pending");
    // When the hold ends the connection is handed over and served like any other.
    expect(await held).toBe("answered");
  });

  it("with the table full of slow header senders from 4 addresses, a fresh connection gets its answer (item 3)", async () => {
    const u = new URL(fleet.controller.url);
    const before = fleet.controller.frontDoor().evicted;
    for (let i = 0; i < 80; i++) {
      const socket = netConnect(
        { host: u.hostname, port: Number(u.port), localAddress: `127.0.4.${1 + (i % 4)}` },
        () => socket.write("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "),
      );
      socket.on("error", () => {});
      sockets.push(socket);
    }
    await until(
      () => fleet.controller.frontDoor().evicted - before >= 30,
      "slow senders evicted to keep the table at its cap",
    );
    expect(fleet.controller.frontDoor().connections).toBeLessThanOrEqual(48);
    const fresh = await httpGet(fleet.controller.url, "/healthz", "127.0.4.9");
    expect(fresh.status).toBe(200);
  });
});
