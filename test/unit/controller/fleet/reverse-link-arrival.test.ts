/**
 * Issue 34 (any replica serves any agent): an agent links to every replica the fleet names, so a
 * call balanced to a replica the agent has not linked to yet, while the agent is online through
 * another one, waits for the link and rides it; a call to a machine that is not online anywhere
 * is refused at once, and one whose link never comes is refused after the grace, both before
 * anything is sent (Unavailable, "nothing was sent"). The agent is Connect's node adapter on a
 * real HTTP/2 connection, handed to the links as an agent's dialed socket would be.
 */
import { createServer, type Http2Server } from "node:http2";
import { connect, type AddressInfo, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { ReverseLinks } from "../../../../controller/fleet/reverse-links.js";
import {
  AgentService,
  CreateSeatRequestSchema,
  CreateSeatResponseSchema,
} from "../../../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { SeatSchema } from "../../../../shared/gen/clankie/fleet/v1/seat_pb.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An agent's side of a link: a socket to a server whose CreateSeat echoes the name. */
async function agentSocket(): Promise<{ socket: TLSSocket; created: string[] }> {
  const created: string[] = [];
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(AgentService, {
        async createSeat(req) {
          created.push(req.name);
          return create(CreateSeatResponseSchema, { seat: create(SeatSchema, { name: req.name }), created: true });
        },
      }),
  });
  const server: Http2Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => sockets.add(s));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  const tcp = connect((server.address() as AddressInfo).port, "127.0.0.1");
  await new Promise<void>((r) => tcp.once("connect", () => r()));
  return { socket: tcp as unknown as TLSSocket, created };
}

const peer = { machine: "m1", serial: "01", notAfter: new Date(Date.now() + 60_000) };

function links(expected: boolean, arrivalGraceMs: number): ReverseLinks {
  const l = new ReverseLinks({ expected: async () => expected, arrivalGraceMs });
  cleanups.push(() => l.closeAll());
  return l;
}

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectError);
  return e as ConnectError;
}

describe("reverse links: a call waits for the link of a machine online elsewhere (issue 34)", () => {
  it("a call made before the agent links here is carried once it links", async () => {
    const l = links(true, 10_000);
    const agent = await agentSocket();
    const conn = l.connection("m1", "tok");
    const call = conn.client.createSeat(create(CreateSeatRequestSchema, { name: "inbox" }), { timeoutMs: 10_000 });
    const ready = conn.connect();
    await new Promise((r) => setTimeout(r, 300));
    expect(agent.created).toEqual([]);
    l.accept(agent.socket, peer);
    expect((await call).seat?.name).toBe("inbox");
    expect(await ready).toBe(true);
    expect(agent.created).toEqual(["inbox"]);
  });

  it("a machine that is not online anywhere is refused at once, nothing sent", async () => {
    const l = links(false, 10_000);
    const started = performance.now();
    const conn = l.connection("m1", "tok");
    expect(await conn.connect()).toBe(false);
    const e = await refusal(conn.client.createSeat(create(CreateSeatRequestSchema, { name: "inbox" })));
    expect(e.code).toBe(Code.Unavailable);
    expect(e.rawMessage).toContain("nothing was sent");
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("a link that never comes ends the wait at the grace, nothing sent", async () => {
    const l = links(true, 200);
    const agent = await agentSocket();
    const conn = l.connection("m1", "tok");
    expect(await conn.connect()).toBe(false);
    const e = await refusal(conn.client.createSeat(create(CreateSeatRequestSchema, { name: "inbox" })));
    expect(e.code).toBe(Code.Unavailable);
    expect(e.rawMessage).toContain("no live link");
    l.accept(agent.socket, peer);
    await new Promise((r) => setTimeout(r, 100));
    expect(agent.created).toEqual([]);
  });
});
