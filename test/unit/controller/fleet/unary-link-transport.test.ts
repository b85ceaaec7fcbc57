/**
 * Issue 17 item 2 (the agent client's per-call work) and ADR 0003 / rules 8 and 25 (definite
 * not-sent versus uncertain): the controller's lean unary transport on a reverse link answers
 * like Connect's own — the message, the agent's gRPC status with its code (a refusal before
 * writing stays a refusal), and a failure the transport sees itself (a reset stream, the
 * deadline, the caller's abort) never reads as "refused before writing", so a delivery whose
 * answer was lost stays uncertain. The server is Connect's own node adapter on a real HTTP/2
 * connection; the client is Connect's `createClient` over the transport under test.
 */
import { createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { createUnaryLinkTransport } from "../../../../controller/fleet/unary-link-transport.js";
import { AgentService, DeliverResponseSchema } from "../../../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { bearerHeaderInterceptor } from "../../../../shared/rpc/bearer-auth.js";
import { agentCallError } from "../../../../shared/errors.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A Connect server whose Deliver answers by the request's text; it records the headers it saw. */
async function agentLike(): Promise<{ url: string; seen: Headers[] }> {
  const seen: Headers[] = [];
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(AgentService, {
        async deliver(req, ctx) {
          seen.push(ctx.requestHeader);
          if (req.text === "refuse") throw new ConnectError("bad delivery id", Code.InvalidArgument);
          if (req.text === "hang") await new Promise((r) => setTimeout(r, 5_000));
          return create(DeliverResponseSchema, {
            result: 1,
            nativeReceiptId: `n-${req.deliveryId}`,
            detail: req.text.repeat(req.text === "big" ? 10_000 : 1),
          });
        },
      }),
  });
  const server: Http2Server = createServer((req, res) => {
    // The stream dies after the request arrived: the answer is lost.
    if (req.headers["x-test"] === "reset") return void req.stream.close(0x2 /* INTERNAL_ERROR */);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (s: import("node:net").Socket) => sockets.add(s));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function clientFor(url: string) {
  const sessions = new Http2SessionManager(url);
  cleanups.push(() => sessions.abort());
  const interceptors = [bearerHeaderInterceptor(() => "tok-1")];
  const fallback = createGrpcTransport({ baseUrl: url, sessionManager: sessions, interceptors });
  return createClient(AgentService, createUnaryLinkTransport({ baseUrl: url, sessions, interceptors, fallback }));
}

const id = "0b7c2a9e-8c3e-4d5f-9a1b-2c3d4e5f6a7b";

describe("unary link transport (issue 17 item 2; definite vs uncertain, ADR 0003)", () => {
  it("issue 17: a Deliver round trip returns the agent's message, with the interceptors' headers and the deadline sent", async () => {
    const agent = await agentLike();
    const client = clientFor(agent.url);
    const res = await client.deliver({ seatName: "s", deliveryId: id, text: "hello" }, { timeoutMs: 3_000 });
    expect(res.nativeReceiptId).toBe(`n-${id}`);
    expect(res.detail).toBe("hello");
    expect(agent.seen[0]!.get("authorization")).toBe("Bearer tok-1");
    expect(agent.seen[0]!.get("grpc-timeout")).toMatch(/^\d+m$/);
    // Many calls on one session, and an answer larger than one DATA frame.
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.deliver({ seatName: "s", deliveryId: id, text: i === 7 ? "big" : `m${i}` }),
      ),
    );
    expect(many[3]!.detail).toBe("m3");
    expect(many[7]!.detail.length).toBe(30_000);
  });

  it("rule 25 / ADR 0003: the agent's own refusal keeps its gRPC code and reads as refused before writing (definite not-sent)", async () => {
    const agent = await agentLike();
    const e = await clientFor(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "refuse" })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ConnectError);
    expect((e as ConnectError).code).toBe(Code.InvalidArgument);
    expect((e as ConnectError).rawMessage).toBe("bad delivery id");
    expect(agentCallError(e).refusedBeforeWrite).toBe(true);
  });

  it("rule 8: a stream reset after the request left is a lost answer, never a refusal (uncertain)", async () => {
    const agent = await agentLike();
    const e = await clientFor(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "x" }, { headers: { "x-test": "reset" } })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ConnectError);
    expect(agentCallError(e).refusedBeforeWrite).toBe(false);
  });

  it("rule 8: the deadline ends the call as DeadlineExceeded, uncertain", async () => {
    const agent = await agentLike();
    const e = await clientFor(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "hang" }, { timeoutMs: 150 })
      .catch((x: unknown) => x);
    expect((e as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(agentCallError(e).refusedBeforeWrite).toBe(false);
  });

  it("rule 9: the caller's abort (shutdown, machine offline) ends the call as Canceled, uncertain", async () => {
    const agent = await agentLike();
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("machine offline")), 100);
    const e = await clientFor(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "hang" }, { signal: ac.signal })
      .catch((x: unknown) => x);
    expect((e as ConnectError).code).toBe(Code.Canceled);
    expect(agentCallError(e).refusedBeforeWrite).toBe(false);
    // Aborted before the call: nothing is sent.
    const before = agent.seen.length;
    const again = await clientFor(agent.url)
      .deliver({ seatName: "s", deliveryId: id, text: "x" }, { signal: ac.signal })
      .catch((x: unknown) => x);
    expect((again as ConnectError).code).toBe(Code.Canceled);
    expect(agent.seen.length).toBe(before);
  });

  it("rule 8: no connection at all is Unavailable, not a refusal", async () => {
    const agent = await agentLike();
    const url = agent.url;
    await cleanups.pop()!();
    const e = await clientFor(url)
      .deliver({ seatName: "s", deliveryId: id, text: "x" }, { timeoutMs: 2_000 })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ConnectError);
    expect(agentCallError(e).refusedBeforeWrite).toBe(false);
  });
});
