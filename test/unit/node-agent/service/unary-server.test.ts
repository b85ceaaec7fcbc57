/**
 * Issue 17 item 2 (on the agent, skip per-call work) and ADR 0003 (definite vs uncertain rests
 * on the agent's gRPC codes): the agent's lean unary gRPC handler answers Connect's own gRPC
 * client exactly as Connect's adapter does — the message, the interceptors' verdicts (a wrong
 * token is Unauthenticated, a FleetError keeps its code through the error boundary), an
 * oversized or malformed body refused with a code — and every other protocol still reaches
 * Connect's adapter. Real HTTP/2 on loopback; the service is a small AgentService
 * implementation (the real agent's service is covered by the delivery suites).
 */
import { createServer, type Http2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { connect as h2connect } from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { createUnaryServer } from "../../../../node-agent/service/unary-server.js";
import { LINK_SESSION, linkContextValues } from "../../../../node-agent/service/link-round-trips.js";
import {
  AgentService,
  DeliverRequestSchema,
  DeliverResponseSchema,
} from "../../../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { bearerAuthInterceptor, bearerHeaderInterceptor } from "../../../../shared/rpc/bearer-auth.js";
import { fleetErrorBoundary } from "../../../../shared/rpc/error-boundary.js";
import { ErrorCode, FleetError } from "../../../../shared/errors.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const id = "0b7c2a9e-8c3e-4d5f-9a1b-2c3d4e5f6a7b";

async function agentLike(): Promise<{ url: string; via: string[]; ended: Promise<unknown>[] }> {
  const via: string[] = [];
  // For each call that waited on its signal ("wait"), the signal's reason once it aborted.
  const ended: Promise<unknown>[] = [];
  const sessions: object[] = [];
  const impl: Partial<ServiceImpl<typeof AgentService>> = {
    async deliver(req, ctx) {
      if (req.text === "wait") {
        ended.push(
          new Promise((r) => ctx.signal.addEventListener("abort", () => r(ctx.signal.reason), { once: true })),
        );
        await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
        return create(DeliverResponseSchema, { detail: `timeout left ${String(ctx.timeoutMs())}` });
      }
      if (req.text === "timeout")
        return create(DeliverResponseSchema, {
          detail: String(ctx.timeoutMs() !== undefined && ctx.timeoutMs()! > 0 && ctx.timeoutMs()! <= 5_000),
        });
      // Which of the server's HTTP/2 sessions the call's context names (the link it came on).
      if (req.text === "session")
        return create(DeliverResponseSchema, {
          detail: String(sessions.indexOf(ctx.values.get(LINK_SESSION) as object)),
        });
      if (req.text === "unknown")
        throw new FleetError(ErrorCode.UnknownSeat, `this agent hosts no seat named ${req.seatName}`);
      return create(DeliverResponseSchema, {
        result: 1,
        nativeReceiptId: `n-${req.deliveryId}`,
        detail: `${req.text}|${ctx.requestHeader.get("x-probe") ?? ""}`,
      });
    },
  };
  const interceptors = [fleetErrorBoundary(), bearerAuthInterceptor((_s, t) => t === "tok-1")];
  const connectRpc = connectNodeAdapter({
    readMaxBytes: 1024,
    routes: (r) => r.service(AgentService, impl),
    interceptors,
    contextValues: linkContextValues,
  });
  const fallback = (req: Http2ServerRequest, res: Http2ServerResponse) => {
    via.push("connect");
    (connectRpc as unknown as (a: Http2ServerRequest, b: Http2ServerResponse) => void)(req, res);
  };
  const lean = createUnaryServer({
    service: AgentService,
    impl: impl as ServiceImpl<typeof AgentService>,
    interceptors,
    readMaxBytes: 1024,
    fallback,
    contextValues: linkContextValues,
  });
  const server: Http2Server = createServer((req, res) => lean(req, res));
  server.on("session", (s) => sessions.push(s));
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => sockets.add(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, via, ended };
}

function grpcClient(url: string, token = "tok-1") {
  return createClient(
    AgentService,
    createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => token)] }),
  );
}

describe("agent's lean unary gRPC handler (issue 17 item 2; ADR 0003)", () => {
  it("issue 17: Connect's gRPC client gets the service's answer, with its headers seen, without Connect's adapter", async () => {
    const agent = await agentLike();
    const res = await grpcClient(agent.url).deliver(
      { seatName: "s", deliveryId: id, text: "hi" },
      { headers: { "x-probe": "p1" }, timeoutMs: 5_000 },
    );
    expect(res.nativeReceiptId).toBe(`n-${id}`);
    expect(res.detail).toBe("hi|p1");
    expect(agent.via).toEqual([]);
  });

  it("ADR 0010: a call's context names the HTTP/2 session it came on, on the lean path and through Connect's adapter", async () => {
    const agent = await agentLike();
    const grpc = await grpcClient(agent.url).deliver({ seatName: "s", deliveryId: id, text: "session" });
    expect(grpc.detail).toBe("0");
    expect(agent.via).toEqual([]);
    const connect = createClient(
      AgentService,
      createConnectTransport({
        baseUrl: agent.url,
        httpVersion: "2",
        interceptors: [bearerHeaderInterceptor(() => "tok-1")],
      }),
    );
    expect((await connect.deliver({ seatName: "s", deliveryId: id, text: "session" })).detail).toBe("1");
    expect(agent.via).toEqual(["connect"]);
  });

  it("ADR 0003: a wrong token is Unauthenticated and a FleetError keeps its code (refusals before any write)", async () => {
    const agent = await agentLike();
    const wrong = await grpcClient(agent.url, "nope")
      .deliver({ seatName: "s", deliveryId: id, text: "hi" })
      .catch((e: unknown) => e);
    expect((wrong as ConnectError).code).toBe(Code.Unauthenticated);
    const unknown = await grpcClient(agent.url)
      .deliver({ seatName: "s9", deliveryId: id, text: "unknown" })
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ConnectError);
    expect((unknown as ConnectError).code).toBe(new FleetError(ErrorCode.UnknownSeat, "x").toConnectError().code);
    expect((unknown as ConnectError).rawMessage).toContain("s9");
  });

  it("issue 17: a body over readMaxBytes is ResourceExhausted; a truncated envelope is refused with a code", async () => {
    const agent = await agentLike();
    const big = await grpcClient(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "x".repeat(4096) })
      .catch((e: unknown) => e);
    expect((big as ConnectError).code).toBe(Code.ResourceExhausted);
    // A raw HTTP/2 request whose envelope promises more bytes than it carries.
    const session = h2connect(agent.url);
    const stream = session.request({
      ":method": "POST",
      ":path": "/clankie.fleet.v1.AgentService/Deliver",
      "content-type": "application/grpc",
      authorization: "Bearer tok-1",
      te: "trailers",
    });
    const trailers = new Promise<Record<string, unknown>>((r) => stream.once("trailers", (t) => r(t)));
    stream.end(Buffer.from([0, 0, 0, 0, 9, 1, 2]));
    stream.resume();
    expect((await trailers)["grpc-status"]).toBe(String(Code.InvalidArgument));
    session.close();
  });

  it("issue 17: the handler's signal aborts at the caller's deadline (DeadlineExceeded) and when the caller resets; timeoutMs counts down", async () => {
    const agent = await agentLike();
    const left = await grpcClient(agent.url).deliver(
      { seatName: "s", deliveryId: id, text: "timeout" },
      { timeoutMs: 5_000 },
    );
    expect(left.detail).toBe("true");
    // A raw request with a 100 ms grpc-timeout that the caller never resets: only the agent's own deadline ends it.
    const session = h2connect(agent.url);
    const stream = session.request({
      ":method": "POST",
      ":path": "/clankie.fleet.v1.AgentService/Deliver",
      "content-type": "application/grpc",
      authorization: "Bearer tok-1",
      te: "trailers",
      "grpc-timeout": "100m",
    });
    const msg = toBinary(
      DeliverRequestSchema,
      create(DeliverRequestSchema, { seatName: "s", deliveryId: id, text: "wait" }),
    );
    const env = Buffer.alloc(5 + msg.length);
    env.writeUInt32BE(msg.length, 1);
    env.set(msg, 5);
    stream.end(env);
    stream.resume();
    while (agent.ended.length < 1) await new Promise((r) => setTimeout(r, 5));
    const byDeadline = (await agent.ended[0]) as ConnectError;
    session.close();
    expect(byDeadline.code).toBe(Code.DeadlineExceeded);
    const reset = new AbortController();
    const call = grpcClient(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "wait" }, { signal: reset.signal })
      .catch((e: unknown) => e);
    while (agent.ended.length < 2) await new Promise((r) => setTimeout(r, 5));
    reset.abort();
    expect(((await agent.ended[1]) as ConnectError).code).toBe(Code.Canceled);
    expect(((await call) as ConnectError).code).toBe(Code.Canceled);
  });

  it("issue 17: another protocol (Connect's own) still reaches Connect's adapter and is answered", async () => {
    const agent = await agentLike();
    const client = createClient(
      AgentService,
      createConnectTransport({
        baseUrl: agent.url,
        httpVersion: "2",
        interceptors: [bearerHeaderInterceptor(() => "tok-1")],
      }),
    );
    const res = await client.deliver({ seatName: "s", deliveryId: id, text: "via connect" });
    expect(res.detail).toBe("via connect|");
    expect(agent.via).toEqual(["connect"]);
  });
});
