/**
 * The fleet the peer and journal sections drive: the controller in this process (so the
 * bench calls the real delivery pipeline, messageSeat, without an MCP hop), and the node
 * agent as a real separate `clankie agent` process with mailbox seats. The controller finds
 * its agent through the endpoint the agent registered; pointing that row at a delay proxy
 * puts the proxy between controller and agent.
 */
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { compileControllerConfig } from "../controller/config.js";
import { startController, type RunningController } from "../controller/main.js";
import { messageSeat, type PipelineDeps } from "../controller/delivery/message-seat.js";
import { AgentClients } from "../controller/nodes/agent-clients.js";
import { SeatTurns } from "../controller/delivery/seat-turns.js";
import { DEFAULT_CONVERSATION } from "../controller/leads/conversations.js";
import { machines, seats } from "../controller/db/schema.js";
import { silentLogger } from "../shared/logger.js";
import { create } from "@bufbuild/protobuf";
import { AuthoritySchema, DeliverRequestSchema } from "../shared/gen/clankie/fleet/v1/agent_pb.js";
import { DeliveryResult as WireResult } from "../shared/gen/clankie/fleet/v1/delivery_pb.js";
import { randomUUID } from "node:crypto";
import { scratchDir } from "./paths.js";
import { spawnClankie, type ClankieProcess } from "./processes.js";
import { ownerClient } from "./owner-client.js";

export const BENCH_MACHINE = "benchbox";

export interface DeliveryResult {
  ms: number;
  outcome: string;
  reason?: string | undefined;
  proofAgeMs?: number | undefined;
  proofs: { kind: string; ageAtWriteMs: number }[];
}

export interface BenchFleet {
  controller: RunningController;
  agent: ClankieProcess;
  agentEndpoint: string;
  seatIds: string[];
  /** One full delivery through the pipeline: admit, Deliver to the agent, settle. */
  deliver(seatId: string, message: string): Promise<DeliveryResult>;
  /**
   * The agent's half alone: one Deliver call straight to the agent (proofs, gate, mailbox
   * write), with no receipt journal around it. Splits the full path's time into journal and agent.
   */
  deliverDirect(seatName: string, message: string): Promise<{ ms: number; ok: boolean }>;
  /** Route the controller's calls to the agent through `url` (a delay proxy) or back to the agent. */
  routeAgentVia(url: string): Promise<void>;
  close(): Promise<void>;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function startBenchFleet(o: { databaseUrl: string | undefined; seats: number }): Promise<BenchFleet> {
  const stateDir = scratchDir("fleet");
  const controller = await startController(compileControllerConfig({ stateDir, port: 0, databaseUrl: o.databaseUrl }), silentLogger);
  const { db } = controller.database;
  const env = { ...process.env };
  delete env.DATABASE_URL;
  let agent: ClankieProcess | undefined;
  try {
    agent = await spawnClankie(
      ["agent", "--controller", controller.url, "--fleet-token-file", join(stateDir, "fleet.token"), "--state-dir", join(stateDir, "agent"), "--machine", BENCH_MACHINE, "--log-level", "error"],
      env,
    );
    const agentEndpoint = agent.ready.endpoint!;
    await waitFor("the agent's registration", async () => (await db.select().from(machines).where(eq(machines.name, BENCH_MACHINE))).length === 1);
    const owner = ownerClient(controller.url, controller.ownerToken);
    const seatIds: string[] = [];
    for (let i = 0; i < o.seats; i++) seatIds.push(await owner.addMailbox(BENCH_MACHINE, `bench-${i}`));
    await waitFor("the seats", async () => (await db.select().from(seats).where(eq(seats.machine, BENCH_MACHINE))).filter((s) => s.present).length >= o.seats);

    const shutdown = new AbortController();
    const pipeline: PipelineDeps = {
      db,
      agents: new AgentClients(),
      turns: new SeatTurns(),
      logger: silentLogger,
      now: () => new Date(),
      isStopping: () => false,
      shutdownSignal: shutdown.signal,
      onJournalChange: () => {},
    };
    const started = agent;
    const [row] = await db.select().from(machines).where(eq(machines.name, BENCH_MACHINE));
    const direct = new AgentClients().get(BENCH_MACHINE, agentEndpoint, row!.agentToken);
    let directVia = agentEndpoint;
    let directConn = direct;
    return {
      controller,
      agent: started,
      agentEndpoint,
      seatIds,
      async deliver(seatId, message) {
        const t0 = performance.now();
        const out = await messageSeat(pipeline, { conversationId: DEFAULT_CONVERSATION }, { seat: seatId, message });
        const ms = performance.now() - t0;
        const body = out.body as { outcome?: string; reason?: string; proofAgeMs?: number; proofs?: { kind: string; ageAtWriteMs: number }[] };
        return { ms, outcome: String(body.outcome), reason: body.reason, proofAgeMs: body.proofAgeMs, proofs: body.proofs ?? [] };
      },
      async deliverDirect(seatName, message) {
        const t0 = performance.now();
        const res = await directConn.client.deliver(
          create(DeliverRequestSchema, { seatName, deliveryId: randomUUID(), text: message, conversationId: DEFAULT_CONVERSATION, authority: create(AuthoritySchema, { ageMs: 0, caller: DEFAULT_CONVERSATION }) }),
          { timeoutMs: 20_000 },
        );
        return { ms: performance.now() - t0, ok: res.result === WireResult.DELIVERED };
      },
      async routeAgentVia(url) {
        await db.update(machines).set({ endpoint: url }).where(eq(machines.name, BENCH_MACHINE));
        if (url !== directVia) {
          if (directConn !== direct) directConn.close();
          directVia = url;
          directConn = url === agentEndpoint ? direct : new AgentClients().get(BENCH_MACHINE, url, row!.agentToken);
        }
      },
      async close() {
        shutdown.abort();
        pipeline.agents.closeAll();
        direct.close();
        if (directConn !== direct) directConn.close();
        await started.stop();
        await controller.close();
      },
    };
  } catch (e) {
    await agent?.stop();
    await controller.close();
    throw e;
  }
}
