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
import postgres from "postgres";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
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
  /** The controller's main (plaintext, loopback) URL. */
  url: string;
  /** The lead token the fleet's own MCP sessions use (for a client of a tool's own, bench/rtt-phases.ts). */
  leadToken: string;
  /** A join token for another machine name (the TLS handshake figures enroll their own identity). */
  enroll(machine: string): Promise<string>;
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
  /** Route the agent's reverse link through `url` (a delay proxy); PostgreSQL only. `accepted` counts the proxy's connections. */
  routeAgentVia?: (url: string, accepted?: () => number) => Promise<void>;
  close(): Promise<void>;
}

/**
 * `cli`: another build's CLI (controller and agent), for a side-by-side comparison (bench/compare-controllers.ts);
 * `controllerNodeOptions`, `agentNodeOptions`: NODE_OPTIONS for that process only (a V8 flag measured side by side).
 */
export async function startBenchFleet(o: {
  databaseUrl: string | undefined;
  seats: number;
  cli?: string;
  controllerNodeOptions?: string;
  agentNodeOptions?: string;
}): Promise<BenchFleet> {
  const stateDir = scratchDir("fleet");
  const env = { ...process.env };
  if (o.controllerNodeOptions) env.NODE_OPTIONS = o.controllerNodeOptions;
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
    const controller = await spawnClankie(
      ["controller", "--state-dir", stateDir, "--port", "0", "--log-level", "error"],
      env,
      o.cli,
    );
    started.push(controller);
    const url = controller.ready.url!;
    const owner = ownerClient(url, readFileSync(join(stateDir, "owner.token"), "utf8").trim());
    const agentEnv: NodeJS.ProcessEnv = { ...process.env, CLANKIE_JOIN_TOKEN: await owner.enroll(BENCH_MACHINE) };
    delete agentEnv.DATABASE_URL;
    if (o.agentNodeOptions) agentEnv.NODE_OPTIONS = o.agentNodeOptions;
    // The agent enrolls and dials the controller's agent port (mutual TLS, reverse link).
    const agent = await spawnClankie(
      [
        "agent",
        "--controller",
        controller.ready.agentUrl!,
        "--state-dir",
        join(stateDir, "agent"),
        "--machine",
        BENCH_MACHINE,
        "--log-level",
        "error",
      ],
      agentEnv,
      o.cli,
    );
    started.push(agent);
    // The agent listens nowhere: its link (and the proxy that delays it) is the controller's agent port.
    const agentEndpoint = controller.ready.agentUrl!;
    const seatIds: string[] = [];
    for (let i = 0; i < o.seats; i++) {
      seatIds.push(await owner.addMailbox(BENCH_MACHINE, `bench-${i}`));
    }
    const token = readFileSync(join(stateDir, "lead.token"), "utf8").trim();
    // One MCP session per concurrent caller, as separate leads would have.
    const leads: Client[] = [];
    const openLead = async () => {
      const lead = new Client({ name: "clankie-bench-lead", version: "0.0.0" });
      await lead.connect(
        new StreamableHTTPClientTransport(new URL(controller.ready.mcpUrl!), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      leads.push(lead);
      closers.push(() => lead.close());
    };
    await openLead();

    const fleet: BenchFleet = {
      controller,
      agent,
      agentEndpoint,
      url,
      leadToken: token,
      enroll: (machine) => owner.enroll(machine),
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
        return {
          ms,
          outcome: String(body.outcome ?? (res.isError ? "error" : "unknown")),
          reason: body.reason,
          proofAgeMs: body.proofAgeMs,
        };
      },
      close: closeAll,
    };
    // Agents listen on no port since the reverse links (ADR 0021). The controller's calls ride
    // the link the agent dialed; to put a delay on it, the controller's advertised agent URL is
    // pointed at a delay proxy in front of its agent port, and the agent relinks through it at
    // its next heartbeat. The agent-only Deliver path (straight to the agent's port) is gone.
    if (o.databaseUrl) {
      const sql = postgres(o.databaseUrl, { max: 1, onnotice: () => {} });
      closers.push(() => sql.end({ timeout: 2 }));
      const own = controller.ready.agentUrl!;
      let current = own;
      fleet.routeAgentVia = async (via, accepted) => {
        const next = via.replace(/^http:/, "https:");
        await sql`update controller_instances set agent_url = ${next} where agent_url = ${current}`;
        current = next;
        // The agent follows at its next heartbeat (every 5 s): wait until it dialed through.
        const deadline = Date.now() + 20_000;
        while (via !== own.replace(/^https:/, "http:") && accepted && accepted() === 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 100));
        await new Promise((r) => setTimeout(r, 500));
      };
    }
    return fleet;
  } catch (e) {
    await closeAll();
    throw e;
  }
}
