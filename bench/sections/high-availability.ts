/**
 * Section: high_availability (issue 34's goals), measured side by side in one run on the HA topology of
 * the verification run (verify/ha-cluster.ts): three `clankie controller` replicas behind HAProxy (TCP),
 * a PostgreSQL primary with a streaming standby behind one multi-host URL, two agents dialing the
 * balancer. Leads (the verify run's, verify/leads.ts) call message_seat through the balancer the whole
 * time; in turn:
 * - tokens: every state directory's lead and owner token tried on every replica (`tokens_valid` of `tokens_checked`);
 * - kill: SIGKILL of replica k mod 3, restarted after a while, `kills` times: the longest wait between
 *   two delivered answers the leads saw from the kill until `settleMs` after the restart (`kill_gap_p99_ms` over
 *   the kills) and samples of the fleet's online list (`agents_shown_offline`);
 * - pause: SIGSTOP of one replica for `pauseMs`: writes by it after SIGCONT to receipts admitted before
 *   (`paused_writes_after_resume`), and the most deliveries in flight to one seat (`max_in_flight_per_seat`);
 * - promote: the primary SIGKILLed and the standby promoted: the time from the promotion to the next
 *   delivered answer (`resume_after_promotion_ms`);
 * - fairness (ha-fairness.ts): 4 callers on each of 2 replicas to one seat: max wait ÷ mean wait, and turns
 *   skipped (a delivery dispatched before one admitted earlier to the same seat).
 * At the end, the mailboxes against every answer: `lost` (told delivered, not there once), `duplicates`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check } from "../../verify/checker.js";
import { startHaCluster, type HaCluster } from "../../verify/ha-cluster.js";
import { pausedWrites, seatOverlaps, type Arrival } from "../../verify/ha-checks.js";
import type { Op, SeatRecord } from "../../verify/history.js";
import { connectLead, firstInfos, startLeads, type Lead } from "../../verify/leads.js";
import { deliveryGapMs } from "../../verify/ha-run.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { percentile, round } from "../stats.js";
import { fairness } from "./ha-fairness.js";
import { create } from "@bufbuild/protobuf";
import { ListMachinesRequestSchema } from "../../shared/gen/clankie/fleet/v1/status_pb.js";

export interface HaConfig {
  kills: number;
  downMs: number;
  pauseMs: number;
  leads: number;
  fairCallsEach: number;
  /** How long after a restart (or a SIGCONT) the leads go on before the next fault. */
  settleMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MACHINES = ["a1", "a2"];
const SEATS = ["m0", "m1"];

async function tokensOnEveryReplica(c: HaCluster): Promise<{ valid: number; checked: number; failures: string[] }> {
  let valid = 0;
  let checked = 0;
  const failures: string[] = [];
  for (const from of c.replicas) {
    const lead = readFileSync(join(from.stateDir, "lead.token"), "utf8").trim();
    for (const on of c.replicas) {
      checked += 2;
      const l: Lead = { name: "token-check", token: lead };
      try {
        l.client = await connectLead(`${on.url}/mcp`, l);
        const r = await l.client.callTool({ name: "list_seats", arguments: {} });
        if (r.isError) throw new Error("list_seats isError");
        valid++;
      } catch (e) {
        failures.push(
          `lead token of replica ${from.index + 1} on replica ${on.index + 1}: ${(e as Error).message.slice(0, 80)}`,
        );
      } finally {
        await l.client?.close().catch(() => {});
      }
      try {
        // Replica `from`'s owner token, on replica `on`.
        await c
          .owner(from.index, on.url)
          .status.listMachines(create(ListMachinesRequestSchema, {}), { timeoutMs: 5_000 });
        valid++;
      } catch (e) {
        failures.push(
          `owner token of replica ${from.index + 1} on replica ${on.index + 1}: ${(e as Error).message.slice(0, 80)}`,
        );
      }
    }
  }
  return { valid, checked, failures: failures.slice(0, 6) };
}

/** Issue 34's fairness part, then its one-replica control (ADR 0046), with the figures ha-report.ts judges. */
async function measureFairness(c: HaCluster, callsEach: number, log: (l: string) => void) {
  log("high_availability: fairness, 4 callers on each of 2 replicas to one seat");
  const fair = await fairness(c, callsEach);
  log("high_availability: the control, the same 8 callers through one replica");
  const control = await fairness(c, callsEach, [0]);
  return {
    fair_max_over_mean_turns: fair.max_over_mean_turns,
    fair_worst_caller_mean_over_mean: fair.worst_caller_mean_over_mean,
    fair_max_over_mean: fair.max_over_mean,
    fair_one_replica_max_over_mean: control.max_over_mean,
    fair_skipped_turns: fair.skipped_turns,
    fair_max_turns_waited: fair.max_turns_waited,
    fairness: fair,
    fairness_one_replica: control,
  };
}

/** The fairness measurement alone, on a fresh cluster (`npm run bench:ha -- --fairness`). */
export async function runFairnessOnly(cfg: HaConfig, log: (l: string) => void): Promise<Record<string, unknown>> {
  const work = mkdtempSync(join(tmpdir(), "clankie-bench-ha-"));
  const c = await startHaCluster({ work, agents: MACHINES, log: (l) => log(`high_availability: ${l}`) });
  try {
    return await measureFairness(c, cfg.fairCallsEach, log);
  } finally {
    await c.stop();
    if (process.env.CLANKIE_BENCH_KEEP === "1") log(`high_availability: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

export async function runHighAvailability(cfg: HaConfig, log: (l: string) => void): Promise<Record<string, unknown>> {
  const work = mkdtempSync(join(tmpdir(), "clankie-bench-ha-"));
  const c = await startHaCluster({ work, agents: MACHINES, log: (l) => log(`high_availability: ${l}`) });
  const history: Op[] = [];
  let stop = false;
  try {
    for (const m of MACHINES) await c.addMailboxes(m, SEATS);
    const seats = MACHINES.flatMap((m) => SEATS.map((s) => `${m}/${s}`));
    const tokens = await tokensOnEveryReplica(c);
    const leads: Lead[] = [];
    for (let i = 0; i < cfg.leads; i++)
      leads.push({ name: `bench-ha-${i}`, token: await c.issueLeadToken(`bench-ha-${i}`) });
    const t0 = performance.now();
    const now = () => performance.now() - t0;
    const workload = startLeads(leads, {
      mcpUrl: c.mcpUrl,
      ops: Number.MAX_SAFE_INTEGER,
      replayEvery: 1_000_000,
      seatOf: (op) => seats[op % seats.length]!,
      record: (o) => history.push(o),
      t0,
      stopped: () => stop,
    });
    let watching = true;
    const offline: string[] = [];
    const watch = (async () => {
      while (watching) {
        const on = await c.online();
        if (on && on.join() !== MACHINES.join()) offline.push(`${Math.round(now())} ms: ${on.join() || "none"}`);
        await sleep(500);
      }
    })();
    await sleep(3_000);

    const gaps: number[] = [];
    for (let k = 0; k < cfg.kills; k++) {
      const r = c.replicas[k % c.replicas.length]!;
      log(`high_availability: kill -9 of replica ${r.index + 1} (${k + 1}/${cfg.kills})`);
      const at = now();
      await r.process.kill();
      await sleep(cfg.downMs);
      await r.process.start();
      await sleep(cfg.settleMs);
      gaps.push(deliveryGapMs(history, at, now()));
    }
    const offlineDuringKills = offline.length;

    const victim = c.replicas[1]!;
    log(`high_availability: SIGSTOP of replica 2 for ${cfg.pauseMs / 1000} s`);
    // Two more leads call replica 2 itself (not through the balancer), so it has calls in flight when it stops.
    let pinnedStop = false;
    const pinnedLeads: Lead[] = [];
    for (let i = 0; i < 2; i++)
      pinnedLeads.push({ name: `bench-ha-pinned-${i}`, token: await c.issueLeadToken(`bench-ha-pinned-${i}`) });
    const pinned = startLeads(pinnedLeads, {
      mcpUrl: `${victim.url}/mcp`,
      ops: Number.MAX_SAFE_INTEGER,
      replayEvery: 1_000_000,
      seatOf: (op) => seats[op % seats.length]!,
      record: (o) => history.push(o),
      t0,
      stopped: () => pinnedStop,
      firstOp: 1_000_000_000,
    });
    await sleep(1_000);
    const pausedAt = new Date();
    victim.process.pause();
    await sleep(cfg.pauseMs);
    victim.process.resume();
    const resumedAt = new Date();
    await sleep(cfg.settleMs);
    pinnedStop = true;
    await pinned.done;
    leads.push(...pinnedLeads);
    const stale = await pausedWrites(c.journal, [{ role: "replica2", pausedAt, resumedAt }]);

    log("high_availability: the primary killed, the standby promoted");
    const { promotedAt } = await c.pg.failover();
    let resumeMs: number | null = null;
    for (let end = performance.now() + 90_000; performance.now() < end; await sleep(100)) {
      const next = history.find((o) => o.type === "ok" && o.replayOf === undefined && o.atMs + t0 > promotedAt);
      if (next) {
        resumeMs = Math.round(next.atMs + t0 - promotedAt);
        break;
      }
    }
    await sleep(3_000);
    stop = true;
    await workload.done;
    watching = false;
    await watch;

    const fair = await measureFairness(c, cfg.fairCallsEach, log);

    // Every answer against the mailboxes; an unclear one is reconciled first.
    for (const o of firstInfos(history).values()) {
      const l = leads.find((x) => x.name === o.lead)!;
      try {
        l.client ??= await connectLead(c.mcpUrl, l);
        await l.client.callTool({ name: "reconcile_seat_call", arguments: { deliveryId: o.deliveryId } }, undefined, {
          timeout: 30_000,
        });
      } catch {
        l.client = undefined;
      }
    }
    for (const l of leads) await l.client?.close().catch(() => {});
    const records: SeatRecord[] = [];
    const arrivals: Arrival[] = [];
    for (const m of MACHINES) {
      const store = new MailboxStore(join(c.agents.get(m)!.stateDir, "mailboxes"));
      for (const s of m === "a1" ? [...SEATS, "fair"] : SEATS) {
        for (const e of store.list(s).entries) {
          if (e.conversationId === "clankie-notice") continue;
          arrivals.push({ seat: `${m}/${s}`, deliveryId: e.deliveryId, atMs: e.receivedAtMs });
          if (s !== "fair")
            records.push({
              seat: `${m}/${s}`,
              deliveryId: e.deliveryId,
              conversationId: e.conversationId,
              text: e.text,
            });
        }
      }
    }
    const overlaps = await seatOverlaps(c.journal, arrivals);
    const result = check(history, records, []);
    return {
      kills: gaps.length,
      kill_gap_p99_ms: round(percentile(gaps, 99), 0),
      kill_gap_samples_ms: gaps,
      // When the faults happened, to place an example (a seat overlap, a gap) in its stage.
      stages: {
        paused_at: pausedAt,
        resumed_at: resumedAt,
        promoted_at: new Date(performance.timeOrigin + promotedAt),
      },
      agents_shown_offline: offlineDuringKills,
      agents_shown_offline_all_faults: offline.length,
      offline_examples: offline.slice(0, 5),
      pause_seconds: cfg.pauseMs / 1000,
      paused_writes_after_resume: stale.count,
      max_in_flight_per_seat: overlaps.max_in_flight_per_seat,
      seat_overlaps: overlaps.seat_overlaps,
      resume_after_promotion_ms: resumeMs,
      ...fair,
      tokens_valid: tokens.valid,
      tokens_checked: tokens.checked,
      token_failures: tokens.failures,
      calls: result.ops,
      delivered: result.ok,
      uncertain: result.info,
      lost: result.lost_acknowledged,
      duplicates: result.duplicates,
      failed_with_effect: result.failed_with_effect,
      examples: { ...result.examples, seat_overlaps: overlaps.examples, paused_writes: stale.examples },
      note: "3 replicas behind HAProxy (TCP, /readyz checks every 500 ms), PostgreSQL primary + streaming standby via a multi-host URL; leads call through the balancer throughout; gaps are the longest wait between two delivered answers from a kill to settleMs after the restart",
    };
  } finally {
    stop = true;
    await c.stop();
    // CLANKIE_BENCH_KEEP=1 keeps the replicas' logs and the agents' state to explain an example.
    if (process.env.CLANKIE_BENCH_KEEP === "1") log(`high_availability: kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}
