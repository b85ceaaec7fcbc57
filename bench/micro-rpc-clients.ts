/**
 * `node dist/bench/micro-rpc-clients.js [--n N] [--rounds R]`: the controller's gRPC client
 * chosen by measurement (issue 17, ADR 0014). The same Deliver call to the agent's real handler
 * (bench/rpc-agent-server.ts: createAgentService and rpc-handler.ts over a mailbox seat, in its own
 * process) through three clients with the same protobuf-es codecs, in rotating rounds on warm
 * connections: Connect's gRPC transport, the controller's lean unary transport
 * (controller/fleet/unary-link-transport.ts, what a delivery rides on a reverse link) over
 * Connect's session manager, and @grpc/grpc-js. This process's CPU per call (user+system), the
 * server's CPU per call and latency. Writes bench/results/rpc-clients.json.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import {
  AgentService,
  AuthoritySchema,
  DeliverRequestSchema,
  DeliverResponseSchema,
  type DeliverRequest,
  type DeliverResponse,
} from "../shared/gen/clankie/fleet/v1/agent_pb.js";
import { DeliveryResult } from "../shared/gen/clankie/fleet/v1/delivery_pb.js";
import { bearerHeaderInterceptor } from "../shared/rpc/bearer-auth.js";
import { createUnaryLinkTransport } from "../controller/fleet/unary-link-transport.js";
import { cpuMsOf, track } from "./processes.js";
import { REPO_ROOT } from "./paths.js";
import { summarize } from "./stats.js";
import { runTool } from "./tool-main.js";

type Call = (req: DeliverRequest) => Promise<DeliverResponse>;

function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: "string" }, rounds: { type: "string" } } });
  const n = Number(values.n ?? 300);
  const rounds = Number(values.rounds ?? 6);
  const server = spawn(process.execPath, [join(REPO_ROOT, "dist", "bench", "rpc-agent-server.js")], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  track(server);
  const ready = JSON.parse(
    await new Promise<string>((resolve, reject) => {
      createInterface({ input: server.stdout! }).once("line", resolve);
      server.once("exit", (code) => reject(new Error(`rpc-agent-server exited (${code}) before it was ready`)));
    }),
  ) as { port: number; token: string; seat: string };
  try {
    const token = ready.token;
    const endpoint = `http://127.0.0.1:${ready.port}`;
    const seatName = ready.seat;

    const sessionManager = new Http2SessionManager(endpoint, { pingIntervalMs: 30_000 });
    const connect = createClient(
      AgentService,
      createGrpcTransport({ baseUrl: endpoint, sessionManager, interceptors: [bearerHeaderInterceptor(() => token)] }),
    );
    const connectCall: Call = (req) => connect.deliver(req, { timeoutMs: 20_000 });
    // The controller's own client on a link: its lean unary transport over a session manager.
    const leanSessions = new Http2SessionManager(endpoint, { pingIntervalMs: 30_000 });
    const leanFallback = createGrpcTransport({
      baseUrl: endpoint,
      sessionManager: leanSessions,
      interceptors: [bearerHeaderInterceptor(() => token)],
    });
    const lean = createClient(
      AgentService,
      createUnaryLinkTransport({
        baseUrl: endpoint,
        sessions: leanSessions,
        interceptors: [bearerHeaderInterceptor(() => token)],
        fallback: leanFallback,
      }),
    );
    const leanCall: Call = (req) => lean.deliver(req, { timeoutMs: 20_000 });

    const Generic = grpc.makeGenericClientConstructor(
      {
        deliver: {
          path: `/${AgentService.typeName}/Deliver`,
          requestStream: false,
          responseStream: false,
          requestSerialize: (r: DeliverRequest) => Buffer.from(toBinary(DeliverRequestSchema, r)),
          requestDeserialize: (b: Buffer) => fromBinary(DeliverRequestSchema, b),
          responseSerialize: (r: DeliverResponse) => Buffer.from(toBinary(DeliverResponseSchema, r)),
          responseDeserialize: (b: Buffer) => fromBinary(DeliverResponseSchema, b),
        },
      },
      "AgentService",
    );
    const target = new URL(endpoint).host;
    const g = new Generic(target, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      deliver(
        req: DeliverRequest,
        md: grpc.Metadata,
        opts: grpc.CallOptions,
        cb: (e: grpc.ServiceError | null, r?: DeliverResponse) => void,
      ): void;
    };
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${token}`);
    const grpcCall: Call = (req) =>
      new Promise((resolve, reject) =>
        g.deliver(req, md, { deadline: Date.now() + 20_000 }, (e, r) => (e ? reject(e) : resolve(r!))),
      );

    const request = (): DeliverRequest =>
      create(DeliverRequestSchema, {
        seatName,
        deliveryId: randomUUID(),
        text: `rpc client bench ${randomUUID()}`,
        conversationId: "bench-rpc",
        authority: create(AuthoritySchema, { ageMs: 0, caller: "bench-rpc" }),
      });
    const clients: Record<string, Call> = { connect: connectCall, lean_unary: leanCall, grpc_js: grpcCall };
    const names = Object.keys(clients);
    const agentPid = server.pid!;
    const stats: Record<string, { cpu: number; agentCpu: number; calls: number; failed: number; times: number[] }> = {};
    for (const name of Object.keys(clients)) stats[name] = { cpu: 0, agentCpu: 0, calls: 0, failed: 0, times: [] };
    // Warm both: JIT, HTTP/2 sessions.
    for (const call of Object.values(clients)) for (let i = 0; i < 50; i++) await call(request());
    for (let r = 0; r < rounds; r++) {
      const order = names.map((_, i) => names[(i + r) % names.length]!);
      for (const name of order) {
        const s = stats[name]!;
        const c0 = selfCpuMs();
        const a0 = cpuMsOf(agentPid);
        for (let i = 0; i < n; i++) {
          const t0 = performance.now();
          const res = await clients[name]!(request());
          s.times.push(performance.now() - t0);
          if (res.result !== DeliveryResult.DELIVERED) s.failed++;
        }
        s.cpu += selfCpuMs() - c0;
        s.agentCpu += cpuMsOf(agentPid) - a0;
        s.calls += n;
      }
    }
    g.close();
    sessionManager.abort();
    const result: Record<string, unknown> = {
      when: new Date().toISOString(),
      n,
      rounds,
      note: "client CPU is this process's user+system per call (noise-proof); agent CPU is the agent process per call; latency is noisy on a shared box",
    };
    for (const [name, s] of Object.entries(stats)) {
      result[name] = {
        client_cpu_ms_per_call: Math.round((s.cpu / s.calls) * 1000) / 1000,
        agent_cpu_ms_per_call: Math.round((s.agentCpu / s.calls) * 1000) / 1000,
        latency: summarize(s.times),
        failed: s.failed,
      };
    }
    const out = join(REPO_ROOT, "bench", "results", "rpc-clients.json");
    mkdirSync(join(REPO_ROOT, "bench", "results"), { recursive: true });
    writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
  } finally {
    server.stdin!.end();
    await new Promise((r) => (server.exitCode === null ? server.once("exit", r) : r(undefined)));
  }
}

runTool(main);
