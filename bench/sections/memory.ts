/**
 * Section 5: resident memory of real separate processes. A `clankie controller` process on
 * a PostgreSQL database holding N receipts (bulk-inserted with generate_series, in the steady
 * state retention leaves: only the newest result bodies kept), with 1,000 seats registered by
 * simulated agents through AgentGatewayService, after real work (list_seats and deliveries
 * over MCP to a real agent). And a real idle `clankie agent` process with one mailbox seat.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import postgres from "postgres";
import { CAPABILITY_VERSION } from "../../shared/capability-version.js";
import { openDatabase } from "../../controller/db/open.js";
import { RETAINED_RESULT_BODIES } from "../../controller/journal/call-receipts.js";
import { removeScratch, scratchDir } from "../paths.js";
import { rssOf, sampleRss, spawnClankie, type ClankieProcess } from "../processes.js";
import { ownerClient } from "../owner-client.js";

export interface MemoryConfig {
  receipts: number;
  machines: number;
  seatsPerMachine: number;
  deliveries: number;
  /** How long each process is watched before its RSS is read. */
  settleSeconds: number;
}

/** Fills both receipt tables in one statement each; ids are deterministic, bodies only on the newest. */
async function bulkInsert(url: string, receipts: number): Promise<number> {
  const t0 = performance.now();
  const database = await openDatabase({ url }); // applies the migrations
  await database.close();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state, proof_age_ms, created_at, dispatched_at, settled_at)
      select 'bulk-' || i, 'global-default', 'sim-' || (i % 50) || '/seat-' || (i % 20), md5(i::text), 'auto', 'delivered', 3,
             now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval
      from generate_series(1, ${receipts}) as i`);
    await sql.unsafe(`insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, result, result_expired, created_at, settled_at)
      select 'bulk-' || i, 'message_seat', 'global-default', md5('call' || i::text), 'settled',
             case when i <= ${RETAINED_RESULT_BODIES} then jsonb_build_object('schemaVersion', 1, 'outcome', 'delivered', 'deliveryId', 'bulk-' || i, 'detail', 'stored durably in the mailbox') end,
             i > ${RETAINED_RESULT_BODIES}, now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval
      from generate_series(1, ${receipts}) as i`);
    await sql.unsafe("analyze");
  } finally {
    await sql.end();
  }
  return performance.now() - t0;
}

/**
 * Simulated machines are written straight into the journal: registering needs a machine
 * certificate per machine now (ADR 0021), and the figure here is the controller's memory
 * with that many rows, not the cost of enrolling them.
 */
async function registerSimulated(databaseUrl: string, machines: number, seatsPerMachine: number): Promise<number> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  let seats = 0;
  try {
    for (let m = 0; m < machines; m++) {
      const name = `sim-${m}`;
      await sql`insert into machines (name, endpoint, agent_token, instance_id, platform, capability_version, agent_version) values (${name}, ${`reverse://${name}`}, ${`sim-token-${m}`}, ${randomUUID()}, 'linux', ${CAPABILITY_VERSION}, 'bench') on conflict do nothing`;
      for (let s = 0; s < seatsPerMachine; s++) {
        await sql`insert into seats (id, machine, name, kind, status, occupant_id, input_capabilities) values (${`${name}/seat-${s}`}, ${name}, ${`seat-${s}`}, 'mailbox', 'idle', ${randomUUID()}, ${sql.json({ deliveryModes: [], interrupt: false, nextTurnOnly: false })}) on conflict do nothing`;
        seats++;
      }
    }
  } finally {
    await sql.end();
  }
  return seats;
}

export async function runMemory(cfg: MemoryConfig, databaseUrl: string) {
  const bulkMs = await bulkInsert(databaseUrl, cfg.receipts);
  const stateDir = scratchDir("memory");
  const env = { ...process.env, DATABASE_URL: databaseUrl };
  const controller = await spawnClankie(
    ["controller", "--state-dir", stateDir, "--port", "0", "--log-level", "error"],
    env,
  );
  let agent: ClankieProcess | undefined;
  let lead: Client | undefined;
  try {
    const url = controller.ready.url!;
    const startRss = rssOf(controller.child.pid!);
    const seats = await registerSimulated(databaseUrl, cfg.machines, cfg.seatsPerMachine);
    const owner = ownerClient(url, readFileSync(join(stateDir, "owner.token"), "utf8").trim());
    const agentEnv: NodeJS.ProcessEnv = { ...process.env, CLANKIE_JOIN_TOKEN: await owner.enroll("memagent") };
    delete agentEnv.DATABASE_URL;
    agent = await spawnClankie(
      [
        "agent",
        "--controller",
        controller.ready.agentUrl!,
        "--state-dir",
        join(stateDir, "agent"),
        "--machine",
        "memagent",
        "--log-level",
        "error",
      ],
      agentEnv,
    );
    await owner.addMailbox("memagent", "inbox");
    const agentIdle = await sampleRss(agent.child.pid!, cfg.settleSeconds * 1000);

    lead = new Client({ name: "clankie-bench-memory", version: "0.0.0" });
    const token = readFileSync(join(stateDir, "lead.token"), "utf8").trim();
    await lead.connect(
      new StreamableHTTPClientTransport(new URL(controller.ready.mcpUrl!), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    for (let i = 0; i < 3; i++) await lead.callTool({ name: "list_seats", arguments: {} });
    let delivered = 0;
    for (let i = 0; i < cfg.deliveries; i++) {
      const res = await lead.callTool({
        name: "message_seat",
        arguments: { seat: "memagent/inbox", message: `memory bench ${i}` },
      });
      if ((res.structuredContent as { outcome?: string } | undefined)?.outcome === "delivered") delivered++;
    }
    const ctl = await sampleRss(controller.child.pid!, cfg.settleSeconds * 1000);
    const agentAfter = rssOf(agent.child.pid!);
    return {
      controller_rss_mb_1m_receipts: ctl.peak_rss_mb,
      agent_rss_mb: agentIdle.rss_mb,
      receipts: cfg.receipts,
      registered_seats: seats + 1,
      controller: {
        at_start_rss_mb: startRss.rss_mb,
        after_work_rss_mb: ctl.rss_mb,
        max_sampled_rss_mb: ctl.max_rss_mb,
        peak_rss_mb: ctl.peak_rss_mb,
      },
      agent: {
        idle_rss_mb: agentIdle.rss_mb,
        idle_peak_rss_mb: agentIdle.peak_rss_mb,
        after_deliveries_rss_mb: agentAfter.rss_mb,
      },
      deliveries: { asked: cfg.deliveries, delivered },
      bulk_insert_s: Math.round(bulkMs / 100) / 10,
      note: "controller_rss_mb_1m_receipts is the controller's peak RSS (VmHWM) over startup, registration of the seats and the deliveries; agent_rss_mb is an idle agent's current RSS (VmRSS).",
    };
  } finally {
    await lead?.close().catch(() => {});
    await agent?.stop();
    await controller.stop();
    removeScratch(stateDir);
  }
}
