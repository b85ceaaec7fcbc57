/**
 * Fuzz properties (fast-check) against real servers and real sockets (issue 11, part 6):
 * - MCP: arbitrary JSON-RPC framing and arbitrary tool arguments posted to a live controller;
 * - protobuf: arbitrary frames to every method of every service (controller and agent);
 * - harness replies: arbitrary Codex app-server frames over a real WebSocket, arbitrary
 *   OpenCode HTTP answers (JSON, SSE-shaped, broken), arbitrary Claude channel lines over a
 *   real unix socket, each read by the node agent's own client code.
 * Every property: an answer of an allowed kind within a bound (no crash, no hang, no 5xx);
 * after each batch the service still answers a real request.
 */
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import { connect as h2connect, constants, type ClientHttp2Session } from "node:http2";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { WebSocketServer } from "ws";
import { CodexConnection } from "../../node-agent/harnesses/codex/connection.js";
import { callOpenCode, jsonBody } from "../../node-agent/harnesses/opencode/http.js";
import { channelHello, pushChannelEvent } from "../../node-agent/harnesses/claude/channel-client.js";
import { AgentService } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { AgentGatewayService } from "../../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { CertificateService, EnrollmentService, FleetService } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { ServerReflection as ReflectionV1 } from "../../shared/gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../shared/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { OwnerService } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { StatusService } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { Health } from "../../shared/gen/grpc/health/v1/health_pb.js";

export interface FuzzConfig {
  seed: number;
  runs: number;
  /** Inputs per batch; the service is checked after each. */
  batch: number;
}

export interface FuzzTally {
  target: string;
  inputs: number;
  failures: string[];
  /** Protobuf targets: how often each gRPC status was answered (a target that only ever hears UNAUTHENTICATED proves little). */
  statuses?: Record<string, number>;
}

const MCP_ALLOWED = new Set([200, 202, 400, 401, 404, 405, 406, 409, 413, 415, 429]);

/** Runs `runs` inputs in batches: fc.assert per batch, then `healthy()`. */
async function batched<T>(
  target: string,
  cfg: FuzzConfig,
  arb: fc.Arbitrary<T>,
  one: (input: T) => Promise<void>,
  healthy: () => Promise<void>,
  examples: [T][] = [],
): Promise<FuzzTally> {
  const tally: FuzzTally = { target, inputs: 0, failures: [] };
  for (let done = 0, b = 0; done < cfg.runs; done += cfg.batch, b++) {
    const numRuns = Math.min(cfg.batch, cfg.runs - done);
    const r = await fc.check(
      fc.asyncProperty(arb, async (x) => {
        tally.inputs++;
        await one(x);
      }),
      // Counterexamples found before are tried first in every run.
      { seed: cfg.seed + b, numRuns, endOnFailure: true, ...(b === 0 && examples.length ? { examples } : {}) },
    );
    if (r.failed)
      tally.failures.push(
        `${target}: ${r.errorInstance instanceof Error ? r.errorInstance.message : String(r.errorInstance)} (counterexample ${JSON.stringify(r.counterexample)?.slice(0, 300)}, seed ${cfg.seed + b})`,
      );
    await healthy();
    if (tally.failures.length) break;
  }
  return tally;
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms (a hang)`)), ms).unref(),
    ),
  ]);

// ---------- MCP ----------

export interface McpTarget {
  mcpUrl: string;
  token: string;
  /** A real request through the official client; throws when the service no longer answers. */
  healthy(): Promise<void>;
}

const jsonRpcFrame = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 4 }),
  fc
    .record(
      {
        jsonrpc: fc.oneof(fc.constant("2.0"), fc.string({ maxLength: 5 })),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null)),
        method: fc.oneof(
          fc.constantFrom(
            "initialize",
            "tools/list",
            "tools/call",
            "ping",
            "notifications/initialized",
            "resources/list",
          ),
          fc.string({ maxLength: 30 }),
        ),
        params: fc.anything({ maxDepth: 3 }),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc
    .array(fc.record({ jsonrpc: fc.constant("2.0"), id: fc.integer(), method: fc.string({ maxLength: 20 }) }), {
      maxLength: 5,
    })
    .map((a) => JSON.stringify(a)),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString("latin1")),
);

const toolCall = fc.record({
  name: fc.oneof(
    fc.constantFrom(
      "message_seat",
      "reconcile_seat_call",
      "list_seats",
      "stop_task",
      "read_worker_reports",
      "no_such_tool",
    ),
    fc.string({ maxLength: 30 }),
  ),
  arguments: fc.oneof(
    fc.record(
      {
        seat: fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: "binary", maxLength: 40 }), fc.anything()),
        message: fc.oneof(fc.string({ maxLength: 300 }), fc.anything()),
        delivery: fc.oneof(fc.constantFrom("steer", "queue", "now"), fc.anything()),
        inReplyTo: fc.anything(),
      },
      { requiredKeys: [] },
    ),
    fc.record({ deliveryId: fc.oneof(fc.uuid(), fc.string({ maxLength: 60 }), fc.anything()) }, { requiredKeys: [] }),
    fc.dictionary(fc.string({ maxLength: 10 }), fc.anything({ maxDepth: 2 }), { maxKeys: 5 }),
    fc.anything({ maxDepth: 2 }),
  ),
  _meta: fc.oneof(
    fc.constant(undefined),
    fc.record({
      "clankie/seat-call": fc.oneof(
        fc.record({ deliveryId: fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.anything()) }),
        fc.anything(),
      ),
    }),
  ),
});

async function initializeSession(t: McpTarget): Promise<string> {
  const r = await fetch(t.mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${t.token}`,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "fuzz", version: "0" } },
    }),
  });
  await r.text();
  const id = r.headers.get("mcp-session-id");
  if (!id) throw new Error(`initialize gave no session (${r.status})`);
  await fetch(t.mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${t.token}`,
      "mcp-session-id": id,
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  }).then((x) => x.text());
  return id;
}

async function postMcp(t: McpTarget, body: string, session: string | undefined): Promise<number> {
  const r = await withTimeout(
    fetch(t.mcpUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${t.token}`,
        "mcp-protocol-version": "2025-06-18",
        ...(session ? { "mcp-session-id": session } : {}),
      },
      body,
    }),
    20_000,
    "MCP request",
  );
  const text = await withTimeout(r.text(), 20_000, "MCP response body");
  if (!MCP_ALLOWED.has(r.status)) throw new Error(`MCP answered HTTP ${r.status}: ${text.slice(0, 200)}`);
  if (/failed query|params:/i.test(text)) throw new Error(`MCP answer leaks SQL: ${text.slice(0, 200)}`);
  return r.status;
}

export async function fuzzMcpFraming(t: McpTarget, cfg: FuzzConfig): Promise<FuzzTally> {
  const session = await initializeSession(t);
  return batched(
    "mcp-jsonrpc-framing",
    cfg,
    fc.tuple(jsonRpcFrame, fc.boolean()),
    async ([body, withSession]) => void (await postMcp(t, body, withSession ? session : undefined)),
    t.healthy,
  );
}

export async function fuzzMcpToolArgs(t: McpTarget, cfg: FuzzConfig): Promise<FuzzTally> {
  let session = await initializeSession(t);
  let n = 0;
  return batched(
    "mcp-tool-args",
    cfg,
    fc.tuple(toolCall, fc.integer()),
    async ([call, id]) => {
      // A session now and then is fresh: the sessions cap and the idle sweep see traffic too.
      if (++n % 500 === 0) session = await initializeSession(t);
      const status = await postMcp(
        t,
        JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: call }),
        session,
      );
      if (status !== 200 && status !== 400) throw new Error(`tools/call answered HTTP ${status}`);
    },
    t.healthy,
  );
}

// ---------- protobuf frames to every service ----------

export interface RpcTarget {
  baseUrl: string;
  token: string;
  /** Another way in than plain HTTP/2 to baseUrl: mutual TLS, or a session on an agent's reverse link. */
  connect?: () => ClientHttp2Session | Promise<ClientHttp2Session>;
  services: { typeName: string; method: Record<string, { name: string }> }[];
  healthy(): Promise<void>;
}

function grpcFrame(payload: Uint8Array, lengthDelta: number, compressed: boolean): Buffer {
  const len = Math.max(0, payload.length + lengthDelta);
  return Buffer.concat([
    Buffer.from([compressed ? 1 : 0, (len >>> 24) & 255, (len >>> 16) & 255, (len >>> 8) & 255, len & 255]),
    Buffer.from(payload),
  ]);
}

async function rawGrpc(session: ClientHttp2Session, path: string, token: string, body: Buffer): Promise<number> {
  return withTimeout(
    new Promise<number>((resolve, reject) => {
      const req = session.request({
        [constants.HTTP2_HEADER_METHOD]: "POST",
        [constants.HTTP2_HEADER_PATH]: path,
        "content-type": "application/grpc+proto",
        te: "trailers",
        authorization: `Bearer ${token}`,
        "grpc-timeout": "5S",
      });
      let headers: Record<string, unknown> = {};
      req.on("response", (h) => (headers = { ...h }));
      req.on("trailers", (t) => (headers = { ...headers, ...t }));
      req.on("data", () => {});
      req.on("error", reject);
      req.on("close", () => {
        const s = Number(headers["grpc-status"]);
        if (Number.isNaN(s)) reject(new Error(`no grpc-status from ${path} (HTTP ${String(headers[":status"])})`));
        else resolve(s);
      });
      req.end(body);
    }),
    15_000,
    `gRPC ${path}`,
  );
}

/** gRPC statuses a garbage or random frame may get; UNKNOWN (2) would mean an unhandled throw. */
const GRPC_ALLOWED = new Set([0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16]);

export async function fuzzProtobuf(
  t: RpcTarget,
  cfg: FuzzConfig,
  methodFilter: (service: string, method: string) => boolean = () => true,
): Promise<FuzzTally> {
  const paths = t.services
    .flatMap((s) => Object.values(s.method).map((m) => `/${s.typeName}/${m.name}`))
    .filter((p) => methodFilter(p.split("/")[1]!, p.split("/")[2]!));
  const open = async () => {
    const s = t.connect ? await t.connect() : h2connect(t.baseUrl);
    s.on("error", () => {});
    return s;
  };
  let session = await open();
  const statuses: Record<string, number> = {};
  const tally = await batched(
    `protobuf-frames(${t.services.map((s) => s.typeName.split(".").pop()).join(",")})`,
    cfg,
    fc.tuple(
      fc.constantFrom(...paths),
      fc.uint8Array({ maxLength: 400 }),
      fc.oneof(fc.constant(0), fc.integer({ min: -5, max: 5 })),
      fc.boolean(),
      fc.nat(3),
    ),
    async ([path, payload, delta, compressed, frames]) => {
      if (session.closed || session.destroyed) session = await open();
      const body = Buffer.concat(
        Array.from({ length: Math.max(1, frames) }, () => grpcFrame(payload, delta, compressed && frames === 2)),
      );
      const status = await rawGrpc(session, path, t.token, body);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (!GRPC_ALLOWED.has(status)) throw new Error(`${path} answered grpc-status ${status}`);
    },
    t.healthy,
  );
  session.close();
  return { ...tally, statuses };
}

/** Every service on the controller's main port (owner token). */
export const CONTROLLER_SERVICES = [OwnerService, StatusService, FleetService, Health, ReflectionV1, ReflectionV1alpha];
/** The services on the controller's agent port for an enrolled machine certificate (ADR 0021). */
export const AGENT_PORT_SERVICES = [AgentGatewayService, CertificateService];
/** The one service the agent port serves to a connection without a certificate: joining. */
export const ENROLLMENT_SERVICES = [EnrollmentService];
/** The node agent's own service, served on the reverse links it dials. */
export const AGENT_SERVICES = [AgentService];

// ---------- harness replies ----------

const codexFrame = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc
    .record(
      {
        id: fc.oneof(fc.constant(1), fc.integer(), fc.string({ maxLength: 5 }), fc.constant(null)),
        result: fc.anything({ maxDepth: 3 }),
        error: fc.anything({ maxDepth: 2 }),
        method: fc.oneof(fc.string({ maxLength: 20 }), fc.constant(undefined)),
        params: fc.anything({ maxDepth: 2 }),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
);

/** A real WebSocket server that answers each connection with the fuzzed frames. */
export async function fuzzCodexReplies(cfg: FuzzConfig): Promise<FuzzTally> {
  let frames: string[] = [];
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  wss.on("connection", (ws) => {
    ws.on("error", () => {});
    ws.once("message", () => {
      for (const f of frames) ws.send(f);
      // Then the server goes away: a reply that never came must end the call, not wait it out.
      setTimeout(() => ws.close(), 5);
    });
  });
  const port = (wss.address() as { port: number }).port;
  const tally = await batched(
    "codex-app-server-replies",
    cfg,
    fc.array(codexFrame, { minLength: 0, maxLength: 4 }),
    async (fs) => {
      frames = fs;
      const o = await withTimeout(
        CodexConnection.open(`ws://127.0.0.1:${port}`, { timeoutMs: 100 }),
        5_000,
        "CodexConnection.open",
      );
      if (o.ok) o.connection.close();
      else if (o.kind !== "handshake_failed" && o.kind !== "unreachable")
        throw new Error(`unexpected outcome ${JSON.stringify(o)}`);
    },
    async () => {
      frames = [JSON.stringify({ id: 1, result: { userAgent: "fuzz/0", codexHome: "/tmp" } })];
      const o = await CodexConnection.open(`ws://127.0.0.1:${port}`, { timeoutMs: 2000 });
      if (o.ok) o.connection.close();
    },
    // Found by the full run: an initialize reply whose result is null made open() throw.
    [[[JSON.stringify({ id: 1, result: null })]], [[JSON.stringify({ id: 1, result: "x" })]]],
  );
  await new Promise<void>((r) => wss.close(() => r()));
  return tally;
}

const openCodeAnswer = fc.record({
  status: fc.constantFrom(200, 200, 200, 204, 400, 401, 404, 500, 503),
  type: fc.constantFrom("application/json", "text/event-stream", "text/plain"),
  body: fc.oneof(
    fc.json({ maxDepth: 4 }),
    fc.string({ maxLength: 300 }),
    fc
      .array(fc.record({ event: fc.string({ maxLength: 20 }), data: fc.json({ maxDepth: 2 }) }), { maxLength: 5 })
      .map((evs) => evs.map((e) => `event: ${e.event}\ndata: ${e.data}\n\n`).join("")),
    fc
      .record(
        {
          data: fc.array(
            fc.record(
              {
                type: fc.constantFrom("session.next.prompted", "x"),
                durable: fc.record({ seq: fc.anything() }),
                data: fc.anything({ maxDepth: 2 }),
              },
              { requiredKeys: [] },
            ),
          ),
          hasMore: fc.anything(),
        },
        { requiredKeys: [] },
      )
      .map((o) => JSON.stringify(o)),
  ),
  cut: fc.boolean(),
});

/** A real HTTP server giving fuzzed OpenCode answers (JSON, SSE-shaped, cut off) to the agent's OpenCode client. */
export async function fuzzOpenCodeReplies(cfg: FuzzConfig): Promise<FuzzTally> {
  let answer: { status: number; type: string; body: string; cut: boolean } = {
    status: 200,
    type: "application/json",
    body: "{}",
    cut: false,
  };
  const server: Server = createHttpServer((req, res) => {
    req.resume();
    const a = answer;
    res.writeHead(a.status, {
      "content-type": a.type,
      ...(a.cut ? { "content-length": String(Buffer.byteLength(a.body) + 10) } : {}),
    });
    if (a.cut) {
      res.write(a.body);
      setTimeout(() => res.destroy(), 5);
    } else res.end(a.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const tally = await batched(
    "opencode-http-replies",
    cfg,
    openCodeAnswer,
    async (a) => {
      answer = a;
      const o = await withTimeout(
        callOpenCode(
          { baseUrl, password: "p" },
          {
            method: "POST",
            path: "/session/x/prompt_async",
            body: { parts: [{ type: "text", text: "hi" }] },
            timeoutMs: 2000,
          },
        ),
        5_000,
        "callOpenCode",
      );
      if (o.kind === "answered" && o.status !== a.status) throw new Error(`status ${o.status} read as ${a.status}`);
      if (!a.cut && o.kind !== "answered") throw new Error(`a whole answer read as ${o.kind}`);
      if (a.cut && o.kind === "answered" && o.body.length > Buffer.byteLength(a.body))
        throw new Error("a cut answer grew");
      jsonBody(o);
    },
    async () => {
      answer = { status: 200, type: "application/json", body: "{}", cut: false };
      const o = await callOpenCode({ baseUrl }, { method: "GET", path: "/", timeoutMs: 2000 });
      if (o.kind !== "answered") throw new Error("the OpenCode client no longer reads a plain answer");
    },
  );
  await new Promise<void>((r) => server.close(() => r()));
  return tally;
}

const channelLine = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc
    .record(
      {
        op: fc.constantFrom("hello", "ack", "push", "x"),
        ok: fc.anything(),
        claudePid: fc.anything(),
        mcpReady: fc.anything(),
        eventId: fc.anything(),
        mac: fc.anything(),
        error: fc.anything(),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
);

/** A real unix socket speaking fuzzed Claude channel lines to the agent's channel client. */
export async function fuzzClaudeChannel(cfg: FuzzConfig): Promise<FuzzTally> {
  const dir = mkdtempSync(join(tmpdir(), "c11-fuzz-channel-"));
  const socketPath = join(dir, "channel.sock");
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, "fuzz-token\n");
  let lines: string[] = [];
  let split = false;
  const server = createNetServer((s) => {
    s.on("error", () => {});
    s.once("data", () => {
      const text = lines.map((l) => l + "\n").join("");
      if (split) for (let i = 0; i < text.length; i += 7) s.write(text.slice(i, i + 7));
      else s.write(text);
      setTimeout(() => s.end(), 20);
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, () => r()));
  const address = { socketPath, tokenFile };
  const tally = await batched(
    "claude-channel-events",
    cfg,
    fc.tuple(fc.array(channelLine, { maxLength: 4 }), fc.boolean(), fc.boolean()),
    async ([ls, sp, push]) => {
      lines = ls;
      split = sp;
      if (push) {
        const o = await withTimeout(
          pushChannelEvent(address, 300, "evt-1", "hello", { sender: "fuzz" }),
          5_000,
          "pushChannelEvent",
        );
        if (!o || typeof o.kind !== "string") throw new Error(`pushChannelEvent gave ${JSON.stringify(o)}`);
        // A forged acknowledgement (no valid MAC for our token) must never read as acknowledged.
        if (o.kind === "acked") throw new Error("a reply without the channel MAC was taken as acknowledged");
      } else {
        const o = await withTimeout(channelHello(address, 300), 5_000, "channelHello");
        if (o.ok && !ls.some((l) => l.includes('"hello"'))) throw new Error("hello accepted without a hello line");
      }
    },
    async () => {
      lines = [JSON.stringify({ op: "hello", ok: true, claudePid: 1, mcpReady: true })];
      split = false;
      const o = await channelHello(address, 2000);
      if (!o.ok) throw new Error("the channel client no longer reads a good hello");
    },
  );
  await new Promise<void>((r) => server.close(() => r()));
  return tally;
}
