/**
 * The fleet the peer and journal sections drive, all real processes: a `clankie controller`
 * process, a `clankie agent` process with mailbox seats, and a lead in this process calling
 * `message_seat` through the official MCP client — the whole path a lead sees (receipt
 * committed, one Deliver call, proofs and gate on the agent, mailbox write, settle). The
 * controller finds its agent through the endpoint row the agent registered; pointing that
 * row at a delay proxy puts the proxy between controller and agent (PostgreSQL only: an
 * embedded PGlite cannot be reached from outside its process).
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AgentService, AuthoritySchema, DeliverRequestSchema } from "../shared/gen/clankie/fleet/v1/agent_pb.js";
import { DeliveryResult as WireResult } from "../shared/gen/clankie/fleet/v1/delivery_pb.js";
import { bearerHeaderInterceptor } from "../shared/rpc/bearer-auth.js";
import { removeScratch, scratchDir } from "./paths.js";
import { spawnClankie, type ClankieProcess } from "./processes.js";
import { ownerClient } from "./owner-client.js";

export const BENCH_MACHINE = "benchbox";

export interface DeliveryResult {
  ms: number;
  outcome: string;
  reason?: string | undefined;
  proofAgeMs?: number | undefined;
}

export interface BenchFleet {
  controller: ClankieProcess;
  agent: ClankieProcess;
  agentEndpoint: string;
  seatIds: string[];
  /** One full delivery as a lead makes it: MCP message_seat to the controller process, on caller's session. */
  deliver(seatId: string, message: string, caller?: number): Promise<DeliveryResult>;
  /** Opens MCP sessions until there are `n`, one per concurrent caller. */
  openCallers(n: number): Promise<void>;
  /**
   * The agent's half alone: one Deliver call straight to the agent (proofs, gate, mailbox
   * write) with no controller or journal around it; undefined on PGlite, whose machine row
   * (and the agent's token in it) lives inside the controller process.
   */
  deliverDirect?: (seatName: string, message: string) => Promise<{ ms: number; ok: boolean }>;
  /** Route the controller's calls to the agent through `url` (a delay proxy); PostgreSQL only. */
  routeAgentVia?: (url: string) => Promise<void>;
  close(): Promise<void>;
}

export async function startBenchFleet(o: { databaseUrl: string | undefined; seats: number }): Promise<BenchFleet> {
  const stateDir = scratchDir("fleet");
  const env = { ...process.env };
  if (o.databaseUrl) env.DATABASE_URL = o.databaseUrl;
  else delete env.DATABASE_URL;
  const started: ClankieProcess[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    for (const p of started.reverse()) await p.stop();
    removeScratch(stateDir);
  };
  try {
    const controller = await spawnClankie(["controller", "--state-dir", stateDir, "--port", "0", "--log-level", "error"], env);
    started.push(controller);
    const url = controller.ready.url!;
    const agentEnv = { ...process.env };
    delete agentEnv.DATABASE_URL;
    const agent = await spawnClankie(
      ["agent", "--controller", url, "--fleet-token-file", join(stateDir, "fleet.token"), "--state-dir", join(stateDir, "agent"), "--machine", BENCH_MACHINE, "--log-level", "error"],
      agentEnv,
    );
    started.push(agent);
    const agentEndpoint = agent.ready.endpoint!;
    const owner = ownerClient(url, readFileSync(join(stateDir, "owner.token"), "utf8").trim());
    const seatIds: string[] = [];
    for (let i = 0; i < o.seats; i++) {
      seatIds.push(await owner.addMailbox(BENCH_MACHINE, `bench-${i}`));
    }
    const token = readFileSync(join(stateDir, "lead.token"), "utf8").trim();
    // One MCP session per concurrent caller, as separate leads would have.
    const leads: Client[] = [];
    const openLead = async () => {
      const lead = new Client({ name: "clankie-bench-lead", version: "0.0.0" });
      await lead.connect(new StreamableHTTPClientTransport(new URL(controller.ready.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      leads.push(lead);
      closers.push(() => lead.close());
    };
    await openLead();

    const fleet: BenchFleet = {
      controller,
      agent,
      agentEndpoint,
      seatIds,
      async openCallers(n) {
        while (leads.length < n) await openLead();
      },
      async deliver(seatId, message, caller = 0) {
        const lead = leads[caller % leads.length]!;
        const t0 = performance.now();
        const res = await lead.callTool({ name: "message_seat", arguments: { seat: seatId, message } });
        const ms = performance.now() - t0;
        const body = (res.structuredContent ?? {}) as { outcome?: string; reason?: string; proofAgeMs?: number };
        return { ms, outcome: String(body.outcome ?? (res.isError ? "error" : "unknown")), reason: body.reason, proofAgeMs: body.proofAgeMs };
      },
      close: closeAll,
    };
    if (o.databaseUrl) {
      const sql = postgres(o.databaseUrl, { max: 1, onnotice: () => {} });
      closers.push(() => sql.end({ timeout: 2 }));
      const [row] = await sql<{ agent_token: string }[]>`select agent_token from machines where name = ${BENCH_MACHINE}`;
      // Re-created when the route changes, so the agent-only figure crosses the same proxy.
      const directTo = (base: string) => createClient(AgentService, createGrpcTransport({ baseUrl: base, interceptors: [bearerHeaderInterceptor(() => row!.agent_token)] }));
      let direct = directTo(agentEndpoint);
      fleet.deliverDirect = async (seatName, message) => {
        const t0 = performance.now();
        const res = await direct.deliver(
          create(DeliverRequestSchema, { seatName, deliveryId: randomUUID(), text: message, conversationId: "bench-direct", authority: create(AuthoritySchema, { ageMs: 0, caller: "bench-direct" }) }),
          { timeoutMs: 20_000 },
        );
        return { ms: performance.now() - t0, ok: res.result === WireResult.DELIVERED };
      };
      fleet.routeAgentVia = async (via) => {
        await sql`update machines set endpoint = ${via} where name = ${BENCH_MACHINE}`;
        direct = directTo(via);
      };
    }
    return fleet;
  } catch (e) {
    await closeAll();
    throw e;
  }
}
