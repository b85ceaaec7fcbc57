/**
 * `npm run verify -- --ha [--quick]` (`npm run verify:ha`): the verification run on the HA topology
 * (ha-cluster.ts): three replicas behind HAProxy on a PostgreSQL primary with a streaming standby, two
 * agents with mailbox seats dialing the balancer, and leads calling through the balancer's one MCP URL.
 * The HA nemeses (ha-nemesis.ts) strike in turn until the schedule has run (twice in full mode, then the
 * standby promoted) and at least --ops first calls were made. After healing, every `info` is reconciled and looked up as in the
 * single-controller run; the checker (checker.ts) reads the history against the mailboxes, and the
 * journal checks (ha-checks.ts) add: never two deliveries in flight to one seat, no write by a paused
 * replica after it resumes to what it held before. Writes verify/results/ha-quick.json or ha-latest.json.
 */
import { execFileSync } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MailboxStore } from "../node-agent/mailbox/store.js";
import { outcomesByNemesis, type NemesisWindow } from "./attribution.js";
import { check, publishReport } from "./checker.js";
import { startHaCluster } from "./ha-cluster.js";
import { pausedWrites, seatOverlaps, type Arrival, type PauseWindow } from "./ha-checks.js";
import { applyHaNemesis, HA_NEMESES, HA_SCHEDULE, type HaNemesisName } from "./ha-nemesis.js";
import type { InfoResolution, Op, SeatRecord } from "./history.js";
import { connectLead, firstInfos, outcomeTally, startLeads, type Lead } from "./leads.js";
import { CLI } from "./processes.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => process.stderr.write(`[verify-ha ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const MACHINES = ["a1", "a2"];

/** The longest wait between two successive `ok` answers from `fromMs` to `toMs`: how long leads saw no delivery. */
export function deliveryGapMs(history: Op[], fromMs: number, toMs: number): number {
  const oks = history.filter((o) => o.type === "ok" && o.atMs >= fromMs && o.atMs <= toMs).map((o) => o.atMs);
  let gap = 0;
  let prev = fromMs;
  for (const t of [...oks, toMs]) {
    gap = Math.max(gap, t - prev);
    prev = t;
  }
  return Math.round(gap);
}

export async function runHa(args: string[]): Promise<number> {
  const flag = (name: string, fallback: number) =>
    args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : fallback;
  const quick = args.includes("--quick");
  const MODE = quick ? "quick" : "full";
  const OPS = flag("ops", quick ? 1_500 : 6_000);
  const LEADS = flag("leads", 12);
  const SEATS_PER_MACHINE = flag("seats", 4);
  const DOWN_MS = flag("down-ms", 3_000);
  const GAP_MS = flag("gap-ms", quick ? 2_500 : 4_000);
  const PAUSE_MS = flag("pause-ms", quick ? 20_000 : 30_000);
  const ROUNDS = flag("rounds", quick ? 1 : 2);
  const resultsDir = fileURLToPath(new URL("../../verify/results/", import.meta.url));
  const outFile = args.includes("--out")
    ? args[args.indexOf("--out") + 1]!
    : join(resultsDir, `ha-${quick ? "quick" : "latest"}.json`);
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), "c34-verify-ha-"));
  mkdirSync(resultsDir, { recursive: true });
  log(
    `mode ${MODE}: ≥${OPS} ops, ${LEADS} leads, ${SEATS_PER_MACHINE} mailbox seats on each of ${MACHINES.join(", ")}, pause ${PAUSE_MS} ms, work dir ${work}`,
  );

  const c = await startHaCluster({ work, agents: MACHINES, log });
  process.once("SIGINT", () => void c.stop().finally(() => process.exit(130)));
  const history: Op[] = [];
  const historyFile = createWriteStream(join(resultsDir, `history-ha-${MODE}.jsonl`));
  try {
    const names = Array.from({ length: SEATS_PER_MACHINE }, (_, i) => `m${i}`);
    for (const m of MACHINES) await c.addMailboxes(m, names);
    const seats = MACHINES.flatMap((m) => names.map((n) => `${m}/${n}`));
    const leads: Lead[] = [];
    for (let i = 0; i < LEADS; i++)
      leads.push({ name: `verify-ha-lead-${i}`, token: await c.issueLeadToken(`verify-ha-lead-${i}`) });
    const record = (o: Op) => {
      history.push(o);
      historyFile.write(JSON.stringify(o) + "\n");
    };

    let stop = false;
    let scheduleDone = false;
    const t0 = performance.now();
    const workload = startLeads(leads, {
      mcpUrl: c.mcpUrl,
      ops: Number.MAX_SAFE_INTEGER,
      replayEvery: 10,
      seatOf: (op) => seats[op % seats.length]!,
      record,
      t0,
      stopped: () => stop,
    });
    const counts: Record<string, number> = Object.fromEntries(HA_NEMESES.map((n) => [n, 0]));
    const windows: NemesisWindow[] = [];
    const pauses: PauseWindow[] = [];
    const promotions: number[] = [];
    const offlineSeen: { nemesis: string; online: string }[] = [];
    const nemesisLoop = async () => {
      const schedule: HaNemesisName[] = [
        ...Array.from({ length: ROUNDS }, () => HA_SCHEDULE).flat(),
        "promote-standby",
      ];
      for (let i = 0; i < schedule.length; i++) {
        await sleep(GAP_MS);
        const name = schedule[i]!;
        log(`nemesis ${name} (${workload.issued()} ops issued)`);
        const startMs = performance.now() - t0;
        // Agents shown offline by the fleet while a replica is down or cut (the goal: none).
        let watching = true;
        const watch = (async () => {
          while (watching) {
            const on = await c.online();
            if (on && on.join() !== MACHINES.join()) offlineSeen.push({ nemesis: name, online: on.join() });
            await sleep(500);
          }
        })();
        try {
          const s = await applyHaNemesis(name, c, i, { downMs: DOWN_MS, pauseMs: PAUSE_MS, log });
          counts[name]!++;
          if (s.pause) pauses.push(s.pause);
          if (s.promotedAt !== undefined) promotions.push(s.promotedAt - t0);
          windows.push({ name, startMs, endMs: performance.now() - t0 });
        } catch (e) {
          log(`nemesis ${name} failed: ${(e as Error).message}`);
        } finally {
          watching = false;
          await watch;
          for (const r of c.replicas)
            if (!r.process.running())
              await r.process
                .start()
                .catch((e: Error) => log(`restart of replica ${r.index + 1} failed: ${e.message}`));
        }
      }
      scheduleDone = true;
    };
    const nemesis = nemesisLoop();
    while (!(scheduleDone && workload.issued() >= OPS)) await sleep(250);
    stop = true;
    await workload.done;
    await nemesis;
    const runMs = performance.now() - t0;
    log(`${workload.issued()} ops in ${Math.round(runMs / 1000)} s; healing`);
    for (const r of c.replicas) {
      await r.relay.up();
      r.process.resume();
      if (!r.process.running()) await r.process.start();
    }
    for (const a of c.agents.values()) if (!a.process.running()) await a.process.start();
    for (let t = Date.now(); (await c.online())?.join() !== MACHINES.join() && Date.now() - t < 60_000; )
      await sleep(500);
    // Outcomes the journal missed during an outage are recorded once it is back.
    await sleep(6_000);

    const toReconcile = firstInfos(history);
    for (const o of toReconcile.values()) {
      const lead = leads.find((l) => l.name === o.lead)!;
      try {
        lead.client ??= await connectLead(c.mcpUrl, lead);
        await lead.client.callTool(
          { name: "reconcile_seat_call", arguments: { deliveryId: o.deliveryId } },
          undefined,
          { timeout: 30_000 },
        );
      } catch {
        lead.client = undefined;
      }
    }
    const listed = new Set<string>(
      (
        JSON.parse(
          execFileSync(
            process.execPath,
            [CLI, "seat-delivery", "list", "--json", "--state-dir", c.replicas[0]!.stateDir],
            { encoding: "utf8" },
          ),
        ) as { unresolved: { id: string }[] }
      ).unresolved.map((r) => r.id),
    );
    const ids = [...toReconcile.values()].map((o) => o.deliveryId);
    const states = new Map<string, string>();
    for (let i = 0; i < ids.length; i += 500) {
      for (const row of await c.journal<
        { id: string; state: string }[]
      >`select id, state from delivery_receipts where id in ${c.journal(ids.slice(i, i + 500))}`)
        states.set(row.id, row.state);
    }
    const infos: InfoResolution[] = [...toReconcile.values()].map((o) => ({
      op: o.op,
      receiptState: states.get(o.deliveryId) ?? "none",
      listed: listed.has(o.deliveryId),
    }));
    const records: SeatRecord[] = [];
    const arrivals: Arrival[] = [];
    for (const m of MACHINES) {
      const store = new MailboxStore(join(c.agents.get(m)!.stateDir, "mailboxes"));
      for (const n of names) {
        for (const e of store.list(n).entries) {
          if (e.conversationId === "clankie-notice") continue;
          records.push({ seat: `${m}/${n}`, deliveryId: e.deliveryId, conversationId: e.conversationId, text: e.text });
          arrivals.push({ seat: `${m}/${n}`, deliveryId: e.deliveryId, atMs: e.receivedAtMs });
        }
      }
    }
    const result = check(history, records, infos);
    const overlaps = await seatOverlaps(c.journal, arrivals);
    const stale = await pausedWrites(c.journal, pauses);
    const kills = windows.filter((w) => w.name === "kill-replica");
    const report = {
      mode: MODE,
      topology:
        "3 replicas behind HAProxy (TCP), PostgreSQL primary + streaming standby (multi-host URL, target_session_attrs=read-write), 2 agents via the balancer",
      ops: result.ops,
      duplicates: result.duplicates,
      lost_acknowledged: result.lost_acknowledged,
      info_unlisted: result.info_unlisted,
      replay_changed: result.replay_changed,
      failed_with_effect: result.failed_with_effect,
      seat_overlaps: overlaps.seat_overlaps,
      max_in_flight_per_seat: overlaps.max_in_flight_per_seat,
      dispatched_unsettled: overlaps.dispatched_unsettled,
      paused_writes_after_resume: stale.count,
      agents_shown_offline: offlineSeen.length,
      delivery_gap_ms_by_kill: kills.map((w) => deliveryGapMs(history, w.startMs, w.endMs + 10_000)),
      resume_after_promotion_ms: promotions.map((p) => {
        const next = history.find((o) => o.type === "ok" && o.replayOf === undefined && o.atMs > p);
        return next ? Math.round(next.atMs - p) : null;
      }),
      nemeses: HA_NEMESES.filter((n) => counts[n]! > 0),
      nemesis_counts: counts,
      ok: result.ok,
      fail: result.fail,
      info: result.info,
      info_reconciled: result.info_reconciled,
      info_listed: result.info_listed,
      replays: result.replays,
      replay_expired: result.replay_expired,
      seat_records: records.length,
      pauses: pauses.map((p) => ({
        role: p.role,
        seconds: Math.round((p.resumedAt.getTime() - p.pausedAt.getTime()) / 1000),
      })),
      outcomes_by_nemesis: outcomesByNemesis(history, windows),
      leads: LEADS,
      seats: seats.length,
      run_seconds: Math.round(runMs / 1000),
      total_seconds: Math.round((Date.now() - started) / 1000),
      ops_per_second: Math.round((result.ops / (runMs / 1000)) * 10) / 10,
      outcomes: outcomeTally(history),
      examples: {
        ...result.examples,
        seat_overlaps: overlaps.examples,
        paused_writes: stale.examples,
        agents_shown_offline: offlineSeen.slice(0, 5),
      },
      finished_at: new Date().toISOString(),
    };
    return publishReport(outFile, report, OPS, [report.seat_overlaps, report.paused_writes_after_resume]);
  } finally {
    historyFile.end();
    await c.stop();
    if (args.includes("--keep")) log(`work dir kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}
