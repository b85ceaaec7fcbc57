/**
 * Section fleet_scale (issue 36 item 2): what one `clankie controller` on PostgreSQL costs per
 * linked machine. The simulator (bench/fleet-sim.ts) links N real agent identities, grown in one
 * run from 1 (the delivery baseline) to each size; at each size, with the fleet idle: the
 * controller's CPU and RSS, PostgreSQL's commits, row writes and backend CPU for the bench's
 * database, a lead's list_seats and the owner's Watch first answer, one lead's message_seat p50
 * against the 1-linked baseline, and a controller restart (SIGTERM, then the same command on the
 * same ports and database) with a lead sending throughout: every agent's relink time and every
 * message accounted for (a `delivered` answer must have its mailbox file).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import postgres from "postgres";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StatusService, WatchRequestSchema } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { SEAT_CALL_META_KEY } from "../../shared/delivery-bodies.js";
import { bearerHeaderInterceptor } from "../../shared/rpc/bearer-auth.js";
import { createScratchDatabase, postgresBaseUrl } from "../databases.js";
import { removeScratch, scratchDir } from "../paths.js";
import { agentPortSockets, cpuMsOf, listenOverflows, rssOf, spawnClankie, type ClankieProcess } from "../processes.js";
import { ownerClient } from "../owner-client.js";
import { percentile, round } from "../stats.js";
import { SimProcess, simMailboxFile, simSeatName, type SimIdentity } from "../fleet-sim.js";

export interface FleetScaleConfig {
  sizes: number[];
  seatsPerAgent: number;
  simProcesses: number;
  idleWindowS: number;
  /** Quiet time after the last agent linked, before the idle window (first seat-status reports). */
  settleS: number;
  deliveries: number;
  warmup: number;
  readSamples: number;
  relinkTimeoutS: number;
}

export const FLEET_SCALE_CONFIG = {
  full: {
    sizes: [10, 100, 1000],
    seatsPerAgent: 10,
    simProcesses: 4,
    idleWindowS: 25,
    settleS: 10,
    deliveries: 100,
    warmup: 20,
    readSamples: 5,
    relinkTimeoutS: 180,
  },
  quick: {
    sizes: [100],
    seatsPerAgent: 10,
    simProcesses: 4,
    idleWindowS: 20,
    settleS: 8,
    deliveries: 40,
    warmup: 20,
    readSamples: 3,
    relinkTimeoutS: 120,
  },
} satisfies Record<string, FleetScaleConfig>;

type Json = Record<string, unknown>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () => loadavg().map((v) => round(v, 2));
const machineName = (i: number) => `sim-${String(i).padStart(4, "0")}`;

/** One lead's MCP session; a call after a transport failure opens a new one (a restarted controller forgets sessions). */
class Lead {
  private client: Client | undefined;
  constructor(
    private readonly mcpUrl: () => string,
    private readonly token: string,
  ) {}

  private async session(): Promise<Client> {
    if (this.client) return this.client;
    const c = new Client({ name: "clankie-bench-fleet-scale", version: "0.0.0" });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(this.mcpUrl()), {
        requestInit: { headers: { authorization: `Bearer ${this.token}` } },
      }),
    );
    this.client = c;
    return c;
  }

  /** The structured body, or throws: `connect` when no session could be opened (nothing was sent). */
  async call(name: string, args: Json, meta?: Json): Promise<Json> {
    let c: Client;
    try {
      c = await this.session();
    } catch (e) {
      throw Object.assign(new Error(`connect: ${(e as Error).message}`), { notSent: true });
    }
    try {
      const res = await c.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, {
        timeout: 60_000,
      });
      return (res.structuredContent ?? { outcome: res.isError ? "error" : "unknown" }) as Json;
    } catch (e) {
      this.drop();
      throw e;
    }
  }

  drop(): void {
    void this.client?.close().catch(() => {});
    this.client = undefined;
  }
}

/** Cumulative counters PostgreSQL keeps for one database, and the CPU of the backends serving it. */
async function pgSample(admin: postgres.Sql, db: string) {
  const [s] = await admin<{ xacts: string; writes: string }[]>`
    select xact_commit::text as xacts, (tup_inserted + tup_updated + tup_deleted)::text as writes
    from pg_stat_database where datname = ${db}`;
  const pids = (await admin<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${db}`).map(
    (r) => r.pid,
  );
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    try {
      cpu.set(pid, cpuMsOf(pid));
    } catch {
      // Gone since the listing.
    }
  }
  return { at: performance.now(), xacts: Number(s?.xacts ?? 0), writes: Number(s?.writes ?? 0), cpu };
}

function backendCpuMs(a: Map<number, number>, b: Map<number, number>): number {
  // A backend that started inside the window counts whole; one that ended drops its share.
  let ms = 0;
  for (const [pid, end] of b) ms += end - (a.get(pid) ?? 0);
  return ms;
}

/** `onSize`: the result so far, after the baseline and after each size (a run cut short keeps what it measured). */
export async function runFleetScale(
  cfg: FleetScaleConfig,
  log: (line: string) => void = () => {},
  onSize: (partial: Json) => void = () => {},
) {
  const db = await createScratchDatabase();
  const dbName = new URL(db.url).pathname.slice(1);
  const stateDir = scratchDir("fleet-scale");
  const simDir = join(stateDir, "sims");
  const admin = postgres(postgresBaseUrl(), { max: 1, onnotice: () => {} });
  const env = { ...process.env, DATABASE_URL: db.url };
  const sims: SimProcess[] = [];
  let controller: ClankieProcess | undefined;
  let lead: Lead | undefined;
  try {
    controller = await spawnClankie(
      ["controller", "--state-dir", stateDir, "--port", "0", "--agent-port", "0", "--log-level", "error"],
      env,
    );
    const ports = { port: new URL(controller.ready.url!).port, agent: new URL(controller.ready.agentUrl!).port };
    const token = (f: string) => readFileSync(join(stateDir, f), "utf8").trim();
    const ownerToken = token("owner.token");
    const owner = ownerClient(controller.ready.url!, ownerToken);
    const leadOf = new Lead(() => controller!.ready.mcpUrl!, token("lead.token"));
    lead = leadOf;
    await sleep(3000);
    const emptyRss = rssOf(controller.child.pid!).rss_mb;
    log(`fleet_scale: empty controller ${emptyRss} MB RSS`);

    let linked = 0;
    const joinRefusals: Record<string, number> = {};
    let unlinkedAfterJoin = 0;
    let tokenRefusals = 0;
    // Join tokens from the owner's FleetService, as `clankie fleet enroll` issues them; a few calls at a time.
    const tokens = async (machines: string[]): Promise<SimIdentity[]> => {
      const queue = [...machines];
      const out: SimIdentity[] = [];
      const worker = async () => {
        for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
          // A controller whose journal is jammed refuses a token now and then: a few tries, a second apart.
          for (let attempt = 1; ; attempt++) {
            try {
              out.push({ machine: m, joinToken: await owner.enroll(m) });
              break;
            } catch (e) {
              tokenRefusals++;
              if (attempt >= 5) throw e;
              await sleep(1000);
            }
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      return out;
    };
    // The delivery target (machine 0) has a simulator process of its own, as a real agent has its machine:
    // sharing one with 249 others put their heartbeats and links ahead of its deliveries in one event loop,
    // the simulator's cost, not the controller's. The rest share cfg.simProcesses processes.
    const simOf = (i: number) => (i === 0 ? 0 : 1 + ((i - 1) % cfg.simProcesses));
    const grow = async (n: number) => {
      while (sims.length < (n > 1 ? 1 + Math.min(cfg.simProcesses, n - 1) : 1)) sims.push(SimProcess.start(simDir));
      let pending = Array.from({ length: n - linked }, (_, j) => linked + j);
      // A join the controller refused (its journal did not answer in time under the burst) gets a fresh token.
      for (let round = 0; pending.length && round < 5; round++) {
        const ids = await tokens(pending.map(machineName));
        const byMachine = new Map(pending.map((i) => [machineName(i), i]));
        const added = await Promise.all(
          sims.map((s, k) =>
            s.add(
              controller!.ready.agentUrl!,
              ids.filter((id) => simOf(byMachine.get(id.machine)!) === k),
              cfg.seatsPerAgent,
            ),
          ),
        );
        const failed = added.flatMap((a) => a.failed);
        unlinkedAfterJoin += added.reduce((x, a) => x + a.unlinked.length, 0);
        for (const f of failed) joinRefusals[f.error.slice(0, 160)] = (joinRefusals[f.error.slice(0, 160)] ?? 0) + 1;
        pending = failed.map((f) => byMachine.get(f.machine)!);
      }
      if (pending.length)
        throw new Error(`${pending.length} agents could not join after 5 tries: ${JSON.stringify(joinRefusals)}`);
      linked = n;
    };
    const seat0 = `${machineName(0)}/${simSeatName(0)}`;
    const deliveryP50 = async (warmup: number) => {
      const ms: number[] = [];
      const outcomes: Record<string, number> = {};
      for (let i = 0; i < warmup + cfg.deliveries; i++) {
        const t0 = performance.now();
        // A failed call is counted by its error, not timed: the run goes on to the next figure.
        const outcome = await leadOf.call("message_seat", { seat: seat0, message: `fleet scale ${i}` }).then(
          (body) => String(body.outcome),
          (e: Error) => `error: ${e.message.slice(0, 120)}`,
        );
        if (i >= warmup && !outcome.startsWith("error")) ms.push(performance.now() - t0);
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      }
      return { p50_ms: round(percentile(ms, 50)), p99_ms: round(percentile(ms, 99)), n: ms.length, outcomes };
    };

    log("fleet_scale: 1 agent linked: the delivery baseline");
    await grow(1);
    // The baseline runs on a controller fresh from its start: three times the warm-up, so a cold JIT does not pass for the 1-linked cost.
    await sleep(cfg.settleS * 1000);
    const baseline = await deliveryP50(cfg.warmup * 3);
    const result: Json = { database: dbName, empty_controller_rss_mb: emptyRss, baseline_1_linked: baseline };

    for (const n of cfg.sizes) {
      const at: Json = { loadavg_start: load() };
      const tGrow = performance.now();
      log(`fleet_scale: linking ${n} agents (${n * cfg.seatsPerAgent} seats)`);
      await grow(n);
      at.link_all_s = round((performance.now() - tGrow) / 1000, 1);
      at.join_refusals_so_far = { ...joinRefusals };
      at.unlinked_2_min_after_join_so_far = unlinkedAfterJoin;
      at.token_refusals_so_far = tokenRefusals;
      await sleep(cfg.settleS * 1000);

      log(`fleet_scale: n=${n} idle window ${cfg.idleWindowS} s`);
      const pid = controller.child.pid!;
      const cpu0 = cpuMsOf(pid);
      const sim0 = sims.reduce((a, s) => a + cpuMsOf(s.child.pid!), 0);
      const pg0 = await pgSample(admin, dbName);
      await sleep(cfg.idleWindowS * 1000);
      const pg1 = await pgSample(admin, dbName);
      const windowS = (pg1.at - pg0.at) / 1000;
      at.controller_idle_cpu_pct = round(((cpuMsOf(pid) - cpu0) / (windowS * 1000)) * 100, 2);
      at.sim_cpu_pct = round(
        ((sims.reduce((a, s) => a + cpuMsOf(s.child.pid!), 0) - sim0) / (windowS * 1000)) * 100,
        1,
      );
      at.pg_writes_per_s = round((pg1.writes - pg0.writes) / windowS, 1);
      at.pg_xacts_per_s = round((pg1.xacts - pg0.xacts) / windowS, 1);
      at.pg_cpu_pct = round((backendCpuMs(pg0.cpu, pg1.cpu) / (windowS * 1000)) * 100, 2);
      at.pg_backends = pg1.cpu.size;
      at.idle_window_s = round(windowS, 1);
      const rss = rssOf(pid).rss_mb;
      at.controller_rss_mb = rss;
      at.rss_mb_per_agent = round((rss - emptyRss) / n, 4);

      const listMs: number[] = [];
      for (let i = 0; i < cfg.readSamples; i++) {
        const t0 = performance.now();
        const body = await leadOf
          .call("list_seats", {})
          .catch((e: Error) => ({ outcome: `error: ${e.message.slice(0, 120)}` }) as Json);
        if (Array.isArray(body.seats)) listMs.push(performance.now() - t0);
        at.seats_listed = Array.isArray(body.seats) ? body.seats.length : body.outcome;
      }
      at.list_seats_ms = round(percentile(listMs, 50), 1);
      at.watch_first_ms = round(
        percentile(await watchFirst(controller.ready.url!, ownerToken, cfg.readSamples), 50),
        1,
      );

      log(`fleet_scale: n=${n} deliveries`);
      const d = await deliveryP50(cfg.warmup);
      at.delivery = d;
      at.delivery_p50_ratio = round(d.p50_ms / baseline.p50_ms, 2);

      log(`fleet_scale: n=${n} controller restart`);
      const restart = await restartWithLead(n);
      Object.assign(at, restart);
      at.loadavg_end = load();
      result[`n${n}`] = at;
      onSize(result);
      log(`fleet_scale: n=${n} ${JSON.stringify(at)}`);
    }
    return result;

    async function restartWithLead(n: number): Promise<Json> {
      const relinks = sims.map((s) => s.relink(cfg.relinkTimeoutS * 1000));
      // Awaited after the restart; a simulator failing before then must not be an unhandled rejection.
      for (const p of relinks) p.catch(() => {});
      const sent: { deliveryId: string; machine: string; seat: string; outcome: string }[] = [];
      const errors: Record<string, string[]> = {};
      let sending = true;
      const sender = (async () => {
        for (let i = 0; sending; i++) {
          const m = Math.floor(Math.random() * n);
          const seat = simSeatName(Math.floor(Math.random() * cfg.seatsPerAgent));
          const deliveryId = randomUUID();
          let outcome: string;
          try {
            const body = await leadOf.call(
              "message_seat",
              { seat: `${machineName(m)}/${seat}`, message: `during restart ${i}` },
              { [SEAT_CALL_META_KEY]: { deliveryId } },
            );
            outcome = String(body.outcome);
          } catch (e) {
            outcome = (e as { notSent?: boolean }).notSent ? "not_sent_no_session" : "transport_error";
            const seen = (errors[outcome] ??= []);
            const msg = (e as Error).message.slice(0, 200);
            if (seen.length < 3 && !seen.includes(msg)) seen.push(msg);
          }
          sent.push({ deliveryId, machine: machineName(m), seat, outcome });
          await sleep(100);
        }
      })();
      await sleep(1000);
      const overflowsBefore = listenOverflows();
      const tTerm = Date.now();
      await controller!.stop();
      const tDown = Date.now();
      controller = await spawnClankie(
        [
          "controller",
          "--state-dir",
          stateDir,
          "--port",
          ports.port,
          "--agent-port",
          ports.agent,
          "--log-level",
          "error",
        ],
        env,
      );
      const tReady = Date.now();
      const cpuAtReady = cpuMsOf(controller.child.pid!);
      const pgAtReady = await pgSample(admin, dbName);
      const simAtReady = sims.reduce((a, s) => a + cpuMsOf(s.child.pid!), 0);
      // What the database was doing while the fleet came back: sampled each second until every relink answered.
      const pgSeen = { max_active: 0, max_lock_waits: 0, max_server_connections: 0 };
      let relinking = true;
      const watcher = (async () => {
        while (relinking) {
          const [a] = await admin<{ active: number; locks: number; total: number }[]>`
            select count(*) filter (where datname = ${dbName} and state = 'active')::int as active,
                   count(*) filter (where datname = ${dbName} and wait_event_type = 'Lock')::int as locks,
                   count(*)::int as total
            from pg_stat_activity`;
          pgSeen.max_active = Math.max(pgSeen.max_active, a?.active ?? 0);
          pgSeen.max_lock_waits = Math.max(pgSeen.max_lock_waits, a?.locks ?? 0);
          pgSeen.max_server_connections = Math.max(pgSeen.max_server_connections, a?.total ?? 0);
          await sleep(1000);
        }
      })();
      const times = await Promise.all(relinks).finally(() => (relinking = false));
      const stuck = times.some((t) => t.missing.length) ? agentPortSockets(ports.agent) : undefined;
      await watcher;
      const pgAtBack = await pgSample(admin, dbName);
      // Whether the controller was the bottleneck while the fleet came back: its CPU over that time.
      const relinkCpuPct = ((cpuMsOf(controller.child.pid!) - cpuAtReady) / Math.max(1, Date.now() - tReady)) * 100;
      const relinkSimCpuPct =
        ((sims.reduce((a, s) => a + cpuMsOf(s.child.pid!), 0) - simAtReady) / Math.max(1, Date.now() - tReady)) * 100;
      await sleep(1000);
      sending = false;
      await sender;
      const fromReady = times.flatMap((t) => Object.values(t.upAtMs).map((u) => (u - tReady) / 1000));
      const missing = times.flatMap((t) => t.missing);
      // Every answer accounted for: delivered must have its file; anything else is listed, with whether it landed.
      const byOutcome: Record<string, { count: number; landed: number }> = {};
      const lostIds: string[] = [];
      for (const s of sent) {
        const landed = existsSync(simMailboxFile(simDir, s.machine, s.seat, s.deliveryId));
        const o = (byOutcome[s.outcome] ??= { count: 0, landed: 0 });
        o.count++;
        if (landed) o.landed++;
        if (s.outcome === "delivered" && !landed) lostIds.push(s.deliveryId);
      }
      return {
        relink_p50_s: round(percentile(fromReady, 50), 2),
        relink_p99_s: round(percentile(fromReady, 99), 2),
        relink_max_s: round(Math.max(...fromReady), 2),
        relink_not_back: missing.length,
        relink_back_within_s: Object.fromEntries(
          [5, 10, 30, 60, 120].map((t) => [t, fromReady.filter((x) => x <= t).length]),
        ),
        relink_controller_cpu_pct: round(relinkCpuPct, 1),
        relink_listen_overflows: listenOverflows() - overflowsBefore,
        ...(stuck ? { relink_agent_port_sockets_at_timeout: stuck } : {}),
        relink_sim_cpu_pct: round(relinkSimCpuPct, 1),
        relink_pg: {
          ...pgSeen,
          cpu_pct: round(
            (backendCpuMs(pgAtReady.cpu, pgAtBack.cpu) / Math.max(1, pgAtBack.at - pgAtReady.at)) * 100,
            1,
          ),
          xacts_per_s: round((pgAtBack.xacts - pgAtReady.xacts) / ((pgAtBack.at - pgAtReady.at) / 1000), 1),
        },
        // The restarted controller's own error log (--log-level error), its last lines.
        controller_errors_tail: controller!.stderr().slice(-1500),
        controller_stop_s: round((tDown - tTerm) / 1000, 2),
        controller_start_s: round((tReady - tDown) / 1000, 2),
        lost: lostIds.length,
        lost_ids: lostIds.slice(0, 20),
        restart_messages: { sent: sent.length, by_outcome: byOutcome, errors },
      };
    }
  } finally {
    lead?.drop();
    await Promise.all(sims.map((s) => s.close().catch(() => {})));
    await controller?.stop();
    await admin.end({ timeout: 2 }).catch(() => {});
    await db.drop().catch((e: Error) => log(`fleet_scale: dropping ${dbName} failed: ${e.message}`));
    removeScratch(stateDir);
  }
}

/** Opens the owner's Watch stream `samples` times; the ms until its first answer each time. */
async function watchFirst(url: string, ownerToken: string, samples: number): Promise<number[]> {
  const status = createClient(
    StatusService,
    createGrpcTransport({ baseUrl: url, interceptors: [bearerHeaderInterceptor(() => ownerToken)] }),
  );
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const abort = new AbortController();
    const t0 = performance.now();
    try {
      // Bounded: a controller that never answers leaves this figure empty (NaN), not the run hanging.
      for await (const _first of status.watch(create(WatchRequestSchema, {}), {
        signal: abort.signal,
        timeoutMs: 60_000,
      })) {
        out.push(performance.now() - t0);
        break;
      }
    } catch {
      // Not measured: the p50 is over the answers that came.
    }
    abort.abort();
  }
  return out;
}
