/**
 * The transit bound the freshness gate adds to the controller's authority age comes from the
 * link itself: HTTP/2 PINGs on the controller's sessions, over a real socket. Before the
 * first PING returns it is the generous unmeasured default; on loopback it is the floor; on a
 * link with 40 ms of round trip it is at least 40 ms (a constant 10 ms would understate it).
 * A single stall of the peer's event loop while a PING is out (on a reverse link: the
 * controller's database work for the heartbeat sent at the same instant) is not the link's
 * round trip; a link that stays slow still is (ADR 0010). A call is bounded by the round trips
 * of the session it came on, never by those of a link the agent has left. Issue 36: the
 * controller's PINGs report its round trip, and while they come the agent sends none of its own.
 */
import { afterEach, describe, expect, it } from "vitest";
import { connect as h2connect, createServer, type ClientHttp2Session, type Http2Server } from "node:http2";
import { createServer as netServer, connect as netConnect, type AddressInfo, type Server, type Socket } from "node:net";
import { LinkRoundTrips, TRANSIT_FLOOR_MS } from "../../../../node-agent/service/link-round-trips.js";
import { UNMEASURED_TRANSIT_BOUND_MS } from "../../../../node-agent/proofs/freshness.js";
import { roundTripOf, roundTripPayload } from "../../../../shared/link-ping-payload.js";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

async function listen(server: Http2Server | Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return (server.address() as AddressInfo).port;
}

async function agentServer(rt: LinkRoundTrips): Promise<number> {
  const server = createServer();
  rt.watch(server);
  const port = await listen(server);
  closers.push(() => server.close());
  return port;
}

/** A TCP relay that holds every chunk `oneWayMs` in each direction. */
async function delayRelay(target: number, oneWayMs: number): Promise<number> {
  const sockets: Socket[] = [];
  const relay = netServer((down) => {
    const up = netConnect(target, "127.0.0.1");
    sockets.push(down, up);
    down.on("data", (b) => setTimeout(() => up.write(b), oneWayMs));
    up.on("data", (b) => setTimeout(() => down.write(b), oneWayMs));
    down.on("error", () => up.destroy());
    up.on("error", () => down.destroy());
    down.on("close", () => up.destroy());
    up.on("close", () => down.destroy());
  });
  const port = await listen(relay);
  closers.push(() => {
    for (const s of sockets) s.destroy();
    relay.close();
  });
  return port;
}

function client(port: number): ClientHttp2Session {
  const c = h2connect(`http://127.0.0.1:${port}`);
  c.on("error", () => {});
  closers.push(() => c.destroy());
  return c;
}

async function until(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe("link-round-trips.LinkRoundTrips", () => {
  /** An agent's HTTP/2 server whose sessions are sampled, and the sessions it got. */
  function watched(intervalMs: number) {
    const rt = new LinkRoundTrips({ intervalMs });
    const sessions: object[] = [];
    const server = createServer();
    server.on("session", (s) => sessions.push(s));
    rt.watch(server);
    return { rt, sessions, server };
  }
  it("is the unmeasured default until a PING returns, then the floor on loopback", async () => {
    const rt = new LinkRoundTrips();
    expect(rt.transitBoundMs()).toBe(UNMEASURED_TRANSIT_BOUND_MS);
    client(await agentServer(rt));
    await until(() => rt.transitBoundMs() !== UNMEASURED_TRANSIT_BOUND_MS);
    expect(rt.transitBoundMs()).toBeGreaterThanOrEqual(TRANSIT_FLOOR_MS);
    expect(rt.transitBoundMs()).toBeLessThan(UNMEASURED_TRANSIT_BOUND_MS);
  });

  it("on a link with 40 ms of round trip the bound covers the whole round trip", async () => {
    const rt = new LinkRoundTrips();
    client(await delayRelay(await agentServer(rt), 20));
    await until(() => rt.transitBoundMs() !== UNMEASURED_TRANSIT_BOUND_MS);
    expect(rt.transitBoundMs()).toBeGreaterThanOrEqual(40);
  });

  it("a one-off 300 ms stall of the peer's event loop while the first PING is out is not taken for the link's round trip", async () => {
    const rt = new LinkRoundTrips();
    const port = await agentServer(rt);
    // The peer (the controller's side, here this process) stalls its loop once, right after the
    // agent's first PING went out: that PING's ack waits 300 ms; the one sent after it does not.
    let stalled = false;
    const c = client(port);
    c.once("remoteSettings", () => {
      setImmediate(() => {
        const until = performance.now() + 300;
        while (performance.now() < until) {
          // Busy: the event loop reads no socket.
        }
        stalled = true;
      });
    });
    await until(() => rt.transitBoundMs() !== UNMEASURED_TRANSIT_BOUND_MS);
    expect(stalled).toBe(true);
    expect(rt.transitBoundMs()).toBeLessThan(300);
  });

  it("issue 36: a PING that returns fast stands alone; only a slow one (or a session's first) is confirmed by a second", async () => {
    const rt = new LinkRoundTrips({ intervalMs: 60 });
    const c = client(await agentServer(rt));
    // The controller's side hears each of the agent's PINGs: a confirming one comes right after the first.
    const heard: number[] = [];
    c.on("ping", () => heard.push(performance.now()));
    await until(() => heard.length >= 12);
    const gaps = heard.slice(1).map((t, i) => t - heard[i]!);
    // The session's first round trip has nothing to be judged by, so it is confirmed.
    expect(gaps[0]).toBeLessThan(30);
    // On loopback the later ones are fast: one PING an interval. Paired, half the gaps would be under 30 ms.
    expect(gaps.slice(1).filter((g) => g < 30).length).toBeLessThanOrEqual(2);
  });

  it("the bound is the worst of the recent samples, and an old outlier ages out", () => {
    const rt = new LinkRoundTrips({ keep: 3 });
    const link = {};
    rt.open(link);
    expect(rt.transitBoundMs(link)).toBe(UNMEASURED_TRANSIT_BOUND_MS);
    rt.record(link, 0.3);
    expect(rt.transitBoundMs(link)).toBe(TRANSIT_FLOOR_MS);
    rt.record(link, 30.2);
    rt.record(link, 1);
    expect(rt.transitBoundMs(link)).toBe(31);
    rt.record(link, 1);
    rt.record(link, 1);
    rt.record(link, 1);
    expect(rt.transitBoundMs(link)).toBe(TRANSIT_FLOOR_MS);
  });

  it("issue 32: an attack's slow sample ages out within a second once a newer one exists, however many samples are kept", async () => {
    const rt = new LinkRoundTrips({ keep: 4, maxAgeMs: 300 });
    const link = {};
    rt.open(link);
    rt.record(link, 1170);
    // While it is the newest, the slow sample is the bound, however old: the link may still be that slow.
    await new Promise((r) => setTimeout(r, 350));
    expect(rt.transitBoundMs(link)).toBe(1170);
    rt.record(link, 1200);
    rt.record(link, 1);
    // Inside its age a slow sample still counts beside a fast one.
    expect(rt.transitBoundMs(link)).toBe(1200);
    await new Promise((r) => setTimeout(r, 350));
    expect(rt.transitBoundMs(link)).toBe(TRANSIT_FLOOR_MS);
  });

  it("a call is bounded by its own session's round trips; a session closed leaves with its samples", async () => {
    const rt = new LinkRoundTrips();
    const sessions: object[] = [];
    const server = createServer();
    server.on("session", (s) => sessions.push(s));
    rt.watch(server);
    const port = await listen(server);
    closers.push(() => server.close());
    // First a link with 60 ms of round trip (a WAN route), then a loopback one beside it.
    const slow = client(await delayRelay(port, 30));
    await until(() => sessions.length === 1 && rt.transitBoundMs(sessions[0]) !== UNMEASURED_TRANSIT_BOUND_MS);
    const fast = client(port);
    await until(() => sessions.length === 2 && rt.transitBoundMs(sessions[1]) !== UNMEASURED_TRANSIT_BOUND_MS);
    const [slowSession, fastSession] = sessions as [object, object];
    expect(rt.transitBoundMs(slowSession)).toBeGreaterThanOrEqual(60);
    expect(rt.transitBoundMs(fastSession)).toBeLessThan(30);
    // A call that names no session gets the worst live link.
    expect(rt.transitBoundMs()).toBeGreaterThanOrEqual(60);
    // The slow link goes: the fast one's calls were never bounded by it, and now nothing is.
    slow.close();
    await until(() => rt.transitBoundMs() < 30);
    expect(rt.transitBoundMs()).toBeLessThan(30);
    expect(rt.transitBoundMs(slowSession)).toBeLessThan(30);
    fast.close();
    await until(() => rt.transitBoundMs() === UNMEASURED_TRANSIT_BOUND_MS);
    expect(rt.transitBoundMs()).toBe(UNMEASURED_TRANSIT_BOUND_MS);
  });

  it("issue 36: the controller's PINGs carry a round trip; while they come the agent sends no PING of its own, a few ms slow or not", async () => {
    const { rt, sessions, server } = watched(150);
    const port = await listen(server);
    closers.push(() => server.close());
    // The controller's side: a PING every 50 ms reporting 8 ms (its sweep answers the last of a burst
    // late: slow beside the agent's own loopback round trip, not slow enough to confirm), counting the agent's PINGs.
    const c = client(port);
    let heard = 0;
    c.on("ping", () => heard++);
    const report = setInterval(() => c.ping(roundTripPayload(8), () => {}), 50);
    closers.push(() => clearInterval(report));
    await until(() => sessions.length === 1 && rt.transitBoundMs(sessions[0]) !== UNMEASURED_TRANSIT_BOUND_MS);
    await new Promise((r) => setTimeout(r, 300)); // the first sample's confirmation is back
    const before = heard;
    await new Promise((r) => setTimeout(r, 750)); // five of the agent's intervals
    expect(heard - before).toBe(0);
    expect(rt.transitBoundMs(sessions[0])).toBe(8);
    // The reports stop (a controller that sends none): the agent's own PINGs resume each interval.
    clearInterval(report);
    const stopped = heard;
    await new Promise((r) => setTimeout(r, 750));
    expect(heard - stopped).toBeGreaterThanOrEqual(2);
  });

  it("issue 36: a reported round trip counts on a slow link; a PING from anything else reports none", async () => {
    expect(roundTripOf(roundTripPayload(41.5))).toBe(41.5);
    expect(roundTripOf(Buffer.alloc(8))).toBeUndefined();
    const { rt, sessions, server } = watched(60_000);
    // 40 ms of round trip: the agent's confirming PING is as slow, so the reported 45 ms stands.
    const c = client(await delayRelay(await listen(server), 20));
    closers.push(() => server.close());
    await until(() => sessions.length === 1 && rt.transitBoundMs(sessions[0]) !== UNMEASURED_TRANSIT_BOUND_MS);
    const own = rt.transitBoundMs(sessions[0]);
    expect(own).toBeGreaterThanOrEqual(40);
    c.ping(roundTripPayload(own + 5), () => {});
    await until(() => rt.transitBoundMs(sessions[0]) > own);
    expect(rt.transitBoundMs(sessions[0])).toBe(own + 5);
  });

  it("issue 32: a reported round trip past reportSlowMs (a stalled controller) is confirmed by the agent's own PING", async () => {
    const { rt, sessions, server } = watched(60_000);
    const c = client(await listen(server));
    closers.push(() => server.close());
    await until(() => sessions.length === 1 && rt.transitBoundMs(sessions[0]) !== UNMEASURED_TRANSIT_BOUND_MS);
    await new Promise((r) => setTimeout(r, 100));
    let heard = 0;
    c.on("ping", () => heard++);
    c.ping(roundTripPayload(1_170), () => {});
    await until(() => heard > 0);
    expect(heard).toBeGreaterThan(0);
    // The sample is the smaller of the two: the link's own, not the stall.
    expect(rt.transitBoundMs(sessions[0])).toBeLessThan(25);
  });
});
