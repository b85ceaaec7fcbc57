/**
 * The front door holds before authentication (issue 11, part 1): a huge body sent with no
 * token is answered from its headers within seconds and never buffered (the controller's
 * own RSS, a real child process, stays within a fixed bound); an authenticated oversized
 * body is 413 (MCP) or RESOURCE_EXHAUSTED (Connect, gRPC) and the client's keep-alive pool
 * still works for the next request; sockets that never speak, never finish their headers or
 * sit idle are closed; one peer address cannot hold more than its connection cap.
 */
import { connect as h2connect, constants } from "node:http2";
import { Agent, request as httpRequest } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedPglite, tempDir } from "../kit/test-db.js";
import { startControllerProcess, type ControllerProcess } from "../kit/controller-process.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(MiB, 0x61);

interface Flood {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  sentBytes: number;
  ms: number;
  peakRssBytes: number;
}

/**
 * Streams up to `totalBytes` as an HTTP/1.1 chunked body (no content-length: the server cannot
 * refuse from the header) and stops once the answer arrives; samples the controller's RSS.
 */
function floodHttp1(
  c: ControllerProcess,
  path: string,
  headers: Record<string, string>,
  totalBytes: number,
): Promise<Flood> {
  const url = new URL(c.url);
  const started = performance.now();
  let peak = c.rssBytes();
  const sampler = setInterval(() => (peak = Math.max(peak, c.rssBytes())), 25);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      path,
      method: "POST",
      headers: { ...headers, "transfer-encoding": "chunked" },
      agent: false,
    });
    const pump = () => {
      while (!answered && sent < totalBytes) {
        sent += CHUNK.length;
        if (!req.write(CHUNK)) return void req.once("drain", pump);
      }
      if (!answered) req.end();
    };
    req.on("response", (res) => {
      answered = true;
      const ms = performance.now() - started;
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => {
        clearInterval(sampler);
        req.destroy();
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body,
          sentBytes: sent,
          ms,
          peakRssBytes: Math.max(peak, c.rssBytes()),
        });
      });
    });
    req.on("error", (e) => {
      if (!answered) {
        clearInterval(sampler);
        reject(e);
      }
    });
    pump();
  });
}

/** The same over HTTP/2 (gRPC): DATA frames until the server answers. */
function floodGrpc(
  c: { url: string; rssBytes(): number },
  path: string,
  token: string | undefined,
  totalBytes: number,
): Promise<{ grpcStatus: number; sentBytes: number; ms: number; peakRssBytes: number }> {
  const started = performance.now();
  let peak = c.rssBytes();
  const sampler = setInterval(() => (peak = Math.max(peak, c.rssBytes())), 25);
  const session = h2connect(c.url);
  session.on("error", () => {});
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    let headers: Record<string, unknown> = {};
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: path,
      "content-type": "application/grpc+proto",
      te: "trailers",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    });
    // A frame that honestly says how long it is: the body a sender would stream.
    stream.write(
      Buffer.from([
        0,
        (totalBytes >>> 24) & 255,
        (totalBytes >>> 16) & 255,
        (totalBytes >>> 8) & 255,
        totalBytes & 255,
      ]),
    );
    const pump = () => {
      while (!answered && sent < totalBytes) {
        sent += CHUNK.length;
        if (!stream.write(CHUNK)) return void stream.once("drain", pump);
      }
    };
    const finish = () => {
      clearInterval(sampler);
      session.destroy();
      const status = Number(headers["grpc-status"]);
      if (Number.isNaN(status)) reject(new Error(`no grpc-status: ${JSON.stringify(headers)}`));
      else
        resolve({
          grpcStatus: status,
          sentBytes: sent,
          ms: performance.now() - started,
          peakRssBytes: Math.max(peak, c.rssBytes()),
        });
    };
    stream.on("response", (h) => {
      headers = { ...h };
      if (h["grpc-status"] !== undefined) {
        answered = true;
        finish();
      }
    });
    stream.on("trailers", (t) => {
      headers = { ...headers, ...t };
      answered = true;
      finish();
    });
    stream.on("data", () => {});
    stream.on("error", () => {
      if (!answered) {
        answered = true;
        finish();
      }
    });
    pump();
  });
}

const UNAUTHENTICATED = 16;
const RESOURCE_EXHAUSTED = 8;
/** What any one request may add to the controller's RSS; the bodies below are 300× that. */
const RSS_BOUND = 64 * MiB;

describe("bounds before authentication, on a real controller process", () => {
  let c: ControllerProcess;

  beforeAll(async () => {
    const stateDir = tempDir("front-door");
    seedPglite(stateDir);
    c = await startControllerProcess(stateDir);
  });
  afterAll(async () => {
    await c?.stop();
  });

  it("300 MB with no token to a Connect route: 401 from the headers, RSS bounded, the connection closed", async () => {
    const before = c.rssBytes();
    const r = await floodHttp1(
      c,
      "/clankie.fleet.v1.OwnerService/AddSeat",
      { "content-type": "application/json" },
      300 * MiB,
    );
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ code: "unauthenticated" });
    expect(r.headers.connection).toBe("close");
    expect(r.sentBytes).toBeLessThan(300 * MiB);
    expect(r.peakRssBytes - before).toBeLessThan(RSS_BOUND);
  });

  // The agents' gateway left this port for the mutual-TLS agent port (ADR 0021); the owner's
  // service takes the same unauthenticated flood here.
  it("400 MB with no token to OwnerService/AddSeat over gRPC: UNAUTHENTICATED, RSS bounded", async () => {
    const before = c.rssBytes();
    const r = await floodGrpc(c, "/clankie.fleet.v1.OwnerService/AddSeat", undefined, 400 * MiB);
    expect(r.grpcStatus).toBe(UNAUTHENTICATED);
    expect(r.sentBytes).toBeLessThan(400 * MiB);
    expect(r.peakRssBytes - before).toBeLessThan(RSS_BOUND);
  });

  it("a wrong token is the same as none", async () => {
    const r = await floodGrpc(c, "/clankie.fleet.v1.OwnerService/AddSeat", "owner_wrong", 50 * MiB);
    expect(r.grpcStatus).toBe(UNAUTHENTICATED);
  });

  it("300 MB with no token to /mcp: 401, RSS bounded", async () => {
    const before = c.rssBytes();
    const r = await floodHttp1(
      c,
      "/mcp",
      { "content-type": "application/json", accept: "application/json, text/event-stream" },
      300 * MiB,
    );
    expect(r.status).toBe(401);
    expect(r.peakRssBytes - before).toBeLessThan(RSS_BOUND);
  });

  it("an authenticated 300 MB body: RESOURCE_EXHAUSTED on Connect and gRPC, 413 on MCP, RSS bounded", async () => {
    const before = c.rssBytes();
    const connectJson = await floodHttp1(
      c,
      "/clankie.fleet.v1.OwnerService/AddSeat",
      { "content-type": "application/json", authorization: `Bearer ${c.ownerToken}` },
      300 * MiB,
    );
    expect(JSON.parse(connectJson.body)).toMatchObject({ code: "resource_exhausted" });
    expect(connectJson.headers.connection).toBe("close");
    const grpc = await floodGrpc(c, "/clankie.fleet.v1.OwnerService/AddSeat", c.ownerToken, 300 * MiB);
    expect(grpc.grpcStatus).toBe(RESOURCE_EXHAUSTED);
    const mcp = await floodHttp1(
      c,
      "/mcp",
      {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${c.leadToken}`,
      },
      300 * MiB,
    );
    expect(mcp.status).toBe(413);
    expect(JSON.parse(mcp.body)).toMatchObject({ error: { message: expect.stringMatching(/^request_too_large/) } });
    expect(Math.max(connectJson.peakRssBytes, grpc.peakRssBytes, mcp.peakRssBytes) - before).toBeLessThan(RSS_BOUND);
  });

  it("after an oversized MCP request, the same keep-alive pool answers the next request (fetch and node:http)", async () => {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${c.leadToken}`,
    };
    const init = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } },
    });
    // fetch (undici): one global pool per origin.
    const big = await fetch(c.mcpUrl, { method: "POST", headers, body: Buffer.alloc(2 * MiB, 0x20) });
    expect(big.status).toBe(413);
    await big.text();
    const next = await fetch(c.mcpUrl, { method: "POST", headers, body: init, signal: AbortSignal.timeout(10_000) });
    expect(next.status).toBe(200);
    await next.text();
    // node:http with one kept-alive socket.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: Buffer | string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(c.mcpUrl, { method: "POST", headers, agent, timeout: 10_000 }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode!));
        });
        req.on("timeout", () => req.destroy(new Error("timed out")));
        req.on("error", reject);
        req.end(body);
      });
    expect(await post(Buffer.alloc(2 * MiB, 0x20))).toBe(413);
    expect(await post(init)).toBe(200);
    agent.destroy();
  });
});

function openSocket(port: number, localAddress = "127.0.0.1"): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: "127.0.0.1", port, localAddress }, () => resolve(s));
    s.on("error", reject);
  });
}
const closedWithin = (s: Socket, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (s.destroyed) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    s.once("close", () => {
      clearTimeout(t);
      resolve(true);
    });
  });

describe("connection timeouts and caps", () => {
  let fleet: TestFleet;
  let port: number;

  beforeAll(async () => {
    fleet = await startFleet("pglite", {
      listenerLimits: { headersTimeoutMs: 500, requestTimeoutMs: 2000, idleTimeoutMs: 800, maxConnectionsPerPeer: 20 },
    });
    port = fleet.controller.port;
  });
  afterAll(async () => {
    await fleet?.close();
  });

  it("a socket that never sends a byte is closed", async () => {
    const s = await openSocket(port);
    s.on("error", () => {});
    expect(await closedWithin(s, 10_000)).toBe(true);
  });

  it("a request whose headers never finish is closed", async () => {
    const s = await openSocket(port);
    s.on("error", () => {});
    s.write("POST /mcp HTTP/1.1\r\nHost: x\r\n");
    const keepTalking = setInterval(() => s.writable && s.write("X-Slow: 1\r\n"), 100);
    const closed = await closedWithin(s, 10_000);
    clearInterval(keepTalking);
    expect(closed).toBe(true);
  });

  it("an HTTP/1.1 keep-alive connection idle after its request is closed", async () => {
    const s = await openSocket(port);
    s.on("error", () => {});
    let answer = "";
    s.on("data", (d: Buffer) => (answer += d.toString()));
    s.write("GET /dashboard HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n");
    expect(await closedWithin(s, 10_000)).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
  });

  it("an HTTP/2 session with no open stream is closed", async () => {
    const session = h2connect(`http://127.0.0.1:${port}`);
    session.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      const s = session.request({
        [constants.HTTP2_HEADER_METHOD]: "POST",
        [constants.HTTP2_HEADER_PATH]: "/grpc.health.v1.Health/Check",
        "content-type": "application/grpc+proto",
        te: "trailers",
      });
      s.on("data", () => {});
      s.on("end", resolve);
      s.on("error", reject);
      s.end(Buffer.from([0, 0, 0, 0, 0]));
    });
    const closed = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 10_000);
      session.once("close", () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    expect(closed).toBe(true);
  });

  // The node agent listens on no port since ADR 0021 (its services ride the reverse links it
  // dials), so it has no front door to bound here; the agent port's refusals without a fleet
  // certificate are in test/integration/fleet-identity.test.ts and test/netns/.

  it("one peer address holds at most its cap; another peer is still served", async () => {
    const held: Socket[] = [];
    for (let i = 0; i < 40; i++) {
      const s = await openSocket(port);
      s.on("error", () => {});
      held.push(s);
    }
    const refused = (await Promise.all(held.map((s) => closedWithin(s, 300)))).filter(Boolean).length;
    expect(refused).toBeGreaterThanOrEqual(20);
    // 127.0.0.2 is another peer on the loopback.
    const res = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: "127.0.0.1", port, path: "/dashboard", localAddress: "127.0.0.2", agent: false },
        (r) => {
          r.resume();
          resolve(r.statusCode!);
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(res).toBe(200);
    for (const s of held) s.destroy();
  });
});

describe("MCP sessions are bounded", () => {
  let fleet: TestFleet;
  const headers = (token: string, session?: string) => ({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${token}`,
    "mcp-protocol-version": "2025-06-18",
    ...(session ? { "mcp-session-id": session } : {}),
  });
  const initialize = async (): Promise<string> => {
    const r = await fetch(fleet.controller.mcpUrl, {
      method: "POST",
      headers: headers(fleet.controller.leadToken),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "flood", version: "0" } },
      }),
    });
    await r.text();
    expect(r.status).toBe(200);
    return r.headers.get("mcp-session-id")!;
  };
  const ping = async (session: string): Promise<number> => {
    const r = await fetch(fleet.controller.mcpUrl, {
      method: "POST",
      headers: headers(fleet.controller.leadToken, session),
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
    });
    await r.text();
    return r.status;
  };

  beforeAll(async () => {
    fleet = await startFleet("pglite", { mcpSessionsPerConversation: 8, mcpSessionIdleMs: 1500 });
  });
  afterAll(async () => {
    await fleet?.close();
  });

  it("a flood of initialize keeps at most the cap per conversation, closing the oldest idle first", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await initialize());
    const live = [];
    for (const id of ids) live.push(await ping(id));
    expect(live.slice(0, 42).every((s) => s === 404)).toBe(true);
    expect(live.slice(42).every((s) => s === 200)).toBe(true);
  });

  it("a session unused for the idle time is closed", async () => {
    const id = await initialize();
    expect(await ping(id)).toBe(200);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await ping(id)).toBe(404);
  });
});
