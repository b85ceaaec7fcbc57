/**
 * Issue 36, rule 55 with a grown heartbeat interval: a replica pings every reverse link and cuts
 * one whose agent stopped answering (frozen, unplugged: the socket stays open, nothing comes
 * back) within 8.5 s, so registry.isOnline, which then needs the link, shows the machine offline
 * inside 10 s. A live idle link is kept. Real sockets and a real HTTP/2 server as the agent; a
 * proxy between them swallows every byte once the "agent" freezes. Each PING after a link's first
 * reports the round trip of the one before: the agent's transit bound needs no PINGs of its own.
 * A link's PINGs go out LINK_PING_MS apart, send to send, under the agent's own 5 s fallback.
 */
import { createServer as createH2Server } from "node:http2";
import { createServer, connect, type Server, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { LINK_PING_MS, ReverseLinks } from "../../controller/fleet/reverse-links.js";
import { roundTripOf } from "../../shared/link-ping-payload.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("issue 36: reverse links are pinged and a silent one is cut (rule 55)", () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const c of closers.splice(0)) c();
  });

  const listen = (onSocket: (s: Socket) => void) =>
    new Promise<number>((resolve) => {
      const srv: Server = createServer(onSocket);
      closers.push(() => srv.close());
      srv.listen(0, "127.0.0.1", () => resolve((srv.address() as { port: number }).port));
    });

  /** An "agent" serving HTTP/2 on a socket it dialed to the controller, through a proxy that can freeze it. */
  async function linkedAgent(links: ReverseLinks, machine: string) {
    let frozen = false;
    let controllerSide!: (s: Socket) => void;
    const accepted = new Promise<Socket>((r) => (controllerSide = r));
    const ctlPort = await listen((s) => controllerSide(s));
    const proxyPort = await listen((fromAgent) => {
      const toController = connect(ctlPort, "127.0.0.1");
      fromAgent.on("data", (d) => frozen || toController.write(d));
      toController.on("data", (d) => frozen || fromAgent.write(d));
      closers.push(() => (fromAgent.destroy(), toController.destroy()));
    });
    const agentH2 = createH2Server();
    const reported: (number | undefined)[] = [];
    const arrivals: number[] = [];
    agentH2.on("session", (s) =>
      s.on("ping", (p: Buffer) => {
        reported.push(roundTripOf(p));
        arrivals.push(performance.now());
      }),
    );
    const agentSock = connect(proxyPort, "127.0.0.1", () => agentH2.emit("connection", agentSock));
    closers.push(() => agentSock.destroy());
    const socket = await accepted;
    closers.push(() => socket.destroy());
    links.accept(socket as unknown as TLSSocket, { machine, serial: "1", notAfter: new Date(Date.now() + 3_600_000) });
    return { freeze: () => (frozen = true), reported, arrivals };
  }

  /** A controller's links with their PING sweep every 200 ms, stopped and closed after the test. */
  function pingingLinks(): ReverseLinks {
    const links = new ReverseLinks();
    const pings = links.startPings(200);
    closers.push(() => {
      pings.stop();
      links.closeAll();
    });
    return links;
  }
  it("a frozen agent's link is cut within 8.5 s; a live idle one stays", async () => {
    const links = pingingLinks();
    await linkedAgent(links, "alive");
    const dead = await linkedAgent(links, "frozen");
    await sleep(2_500); // a ping each has been answered
    expect(links.has("alive") && links.has("frozen")).toBe(true);
    dead.freeze();
    const t0 = performance.now();
    while (links.has("frozen") && performance.now() - t0 < 12_000) await sleep(100);
    expect(links.has("frozen")).toBe(false);
    expect(performance.now() - t0).toBeLessThan(8_500);
    expect(links.has("alive")).toBe(true);
  }, 30_000);

  it("each PING after a link's first reports the round trip of the one before, LINK_PING_MS after it", async () => {
    const links = pingingLinks();
    const agent = await linkedAgent(links, "alive");
    const t0 = performance.now();
    while (agent.reported.length < 2 && performance.now() - t0 < 8_000) await sleep(100);
    expect(agent.reported[0]).toBeUndefined();
    expect(agent.reported[1]).toBeGreaterThan(0);
    expect(agent.reported[1]).toBeLessThan(1_000);
    // Send to send, within one 200 ms sweep: not from the answer, which added a sweep to each period.
    const gap = agent.arrivals[1]! - agent.arrivals[0]!;
    expect(gap).toBeGreaterThan(LINK_PING_MS - 250);
    expect(gap).toBeLessThan(LINK_PING_MS + 250);
  }, 15_000);
});
