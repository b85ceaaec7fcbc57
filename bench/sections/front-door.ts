/**
 * Section front_door (issue 32): each attack against its own `clankie up` (the real CLI, as
 * `npm start` runs it) on a fresh PostgreSQL database, with a mailbox seat added by
 * `clankie seat add`, while ONE well-behaved lead calls `message_seat` on that seat, one call
 * at a time. Per attack: a quiet window (the "before"), the attack (run by a child process,
 * bench/front-door-attacker.ts), and a window after it; the controller's VmRSS is sampled
 * throughout. Not part of `npm run bench`: at 4 × ~100 s in full mode it would double that
 * run, and an attack's aftermath must not leak into the other sections' figures.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ATTACKS, type AttackName, type AttackSizes, type AttackStats } from "../front-door-attacks.js";
import type { AttackerArgs, AttackerMessage } from "../front-door-attacker.js";
import { BenchLead, LEAD_TIMEOUT, leadLoop, type LeadCall } from "../front-door-lead.js";
import { createScratchDatabase } from "../databases.js";
import { CLI, removeScratch, scratchDir } from "../paths.js";
import { cpuMsOf, rssOf, spawnClankie, track, type ClankieProcess } from "../processes.js";
import { percentile, round } from "../stats.js";

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SEAT = "inbox";
/** "Back" after the attack: VmRSS at most this much above the quiet window's (the peak may be +100 MB). */
export const RSS_BACK_WITHIN_MB = 50;

export interface FrontDoorConfig {
  warmupCalls: number;
  beforeS: number;
  /**
   * Every attack's window, rapid reset's too: the issue found it with 5 s, but a 5 s window holds ~100 lead
   * calls, and their p99 is the second slowest (the same build read 3.56× and 1.66× half an hour apart).
   */
  attackS: number;
  /** The window after the attack: the RSS at its end is `rss_after_mb`; 60 s in full mode. */
  afterS: number;
  leadGapMs: number;
  leadTimeoutMs: number;
  sizes: AttackSizes;
  /** The `clankie` CLI to run (default: this build's); bench/profile/front-door-profile.ts sets another build's. */
  cli?: string;
}

const ISSUE_SIZES: AttackSizes = {
  checkConcurrency: 64,
  watchStreams: 8_000,
  watchStreamsPerConnection: 125,
  resetConnections: 8,
  slowConnections: 800,
  slowDripMs: 3_000,
};
const TINY_SIZES: AttackSizes = {
  checkConcurrency: 8,
  watchStreams: 64,
  watchStreamsPerConnection: 16,
  resetConnections: 2,
  slowConnections: 40,
  slowDripMs: 500,
};

/** A second of each attack at a fraction of its size: the harness runs end to end. */
const TINY = { sizes: TINY_SIZES };
/** The issue's sizes. */
const ISSUE = { leadGapMs: 20, sizes: ISSUE_SIZES };

export function frontDoorConfig(mode: "full" | "quick" | "tiny"): FrontDoorConfig {
  switch (mode) {
    case "full":
      return { ...ISSUE, warmupCalls: 10, beforeS: 20, attackS: 20, afterS: 60, leadTimeoutMs: 20_000 };
    case "quick":
      return { ...ISSUE, warmupCalls: 5, beforeS: 8, attackS: 10, afterS: 15, leadTimeoutMs: 10_000 };
    case "tiny":
      return { ...ISSUE, warmupCalls: 2, beforeS: 1, attackS: 1, afterS: 1, leadTimeoutMs: 5_000, ...TINY };
  }
}

/** What a run still has to remove (database, state dir); an interrupted run does it (bench/run-front-door.ts). */
export const pendingCleanups = new Set<() => Promise<void>>();

/** The compiled attacker beside this module, or its source through tsx (`tsx bench/run-front-door.ts`). */
function attackerCommand(): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  const js = join(here, "..", "front-door-attacker.js");
  if (existsSync(js)) return [js];
  return ["--import", "tsx", join(here, "..", "front-door-attacker.ts")];
}

interface Attacker {
  readonly pid: number;
  /** Starts the attack and resolves with its figures once its sockets are closed. */
  run(): Promise<AttackStats>;
  kill(): void;
}

async function startAttacker(a: AttackerArgs): Promise<Attacker> {
  const stdio = ["ignore", "ignore", "pipe", "ipc"] as const;
  const child: ChildProcess = spawn(process.execPath, [...attackerCommand(), JSON.stringify(a)], { stdio: [...stdio] });
  track(child);
  // An attacker has a machine of its own; here it shares two cores with the controller, PostgreSQL and the
  // lead, and its own CPU (rapid reset's loop takes a core) slowed the lead as much as the controller's work
  // did. At the lowest priority it gets the cores the others leave idle; `attacker_cpu_pct` and its rates
  // show it still ran at full size.
  setPriority(child.pid!, 19);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const next = () =>
    new Promise<AttackerMessage>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the attacker exited with ${code}: ${stderr}`));
      child.once("exit", onExit);
      child.once("message", (m: AttackerMessage) => {
        child.off("exit", onExit);
        resolve(m);
      });
    });
  const ready = await next();
  if (ready.type !== "ready") throw new Error(`the attacker did not start: ${JSON.stringify(ready)}`);
  return {
    pid: child.pid!,
    async run() {
      const done = next();
      child.send({ type: "start" });
      const m = await done;
      if (m.type === "failed") throw new Error(`the attack failed: ${m.error}`);
      if (m.type !== "done") throw new Error(`unexpected attacker message ${JSON.stringify(m)}`);
      return m.stats;
    },
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

interface RssSample {
  t: number;
  mb: number;
}

function sampleRssEvery(pid: number, everyMs: number): { samples: RssSample[]; stop(): void } {
  const samples: RssSample[] = [];
  const take = () => {
    try {
      samples.push({ t: performance.now(), mb: rssOf(pid).rss_mb });
    } catch {
      // The controller is gone: the section's stop or a crash, which the lead's errors show.
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return { samples, stop: () => clearInterval(timer) };
}

function countBy(calls: LeadCall[], kind: LeadCall["kind"]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of calls) if (c.kind === kind) out[c.result] = (out[c.result] ?? 0) + 1;
  return out;
}

const isProofStale = (c: LeadCall) => c.kind === "refused" && c.result.endsWith("/proof_stale");

/**
 * The lead's figures over one window. The latencies are every answered call's (delivered or
 * refused) and every timeout's at the timeout (a lower bound); a call that failed at once (a
 * reset or refused connection) says nothing of the controller's speed and is counted in
 * `lead_errors_*` only, so it cannot pull the p99 down.
 */
function leadFigures(calls: LeadCall[], name: string): Record<string, unknown> {
  const ms = calls.filter((c) => c.kind !== "error" || c.result === LEAD_TIMEOUT).map((c) => c.end - c.start);
  return {
    [`lead_p50_${name}_ms`]: round(percentile(ms, 50)),
    [`lead_p99_${name}_ms`]: round(percentile(ms, 99)),
    [`lead_max_${name}_ms`]: round(ms.length ? Math.max(...ms) : Number.NaN),
    [`lead_calls_${name}`]: calls.length,
    [`lead_timed_${name}`]: ms.length,
    [`lead_delivered_${name}`]: calls.filter((c) => c.kind === "delivered").length,
    [`lead_errors_${name}`]: calls.filter((c) => c.kind === "error").length,
    [`errors_${name}`]: countBy(calls, "error"),
    [`refusals_${name}`]: countBy(calls, "refused"),
  };
}

/** The moments (performance.now()) that split a run into before, during and after. */
interface Marks {
  before: number;
  attack: number;
  end: number;
  stop: number;
}

function figures(calls: LeadCall[], samples: RssSample[], t: Marks): Record<string, unknown> {
  const startedIn = (a: number, b: number) => calls.filter((c) => c.start >= a && c.start < b);
  const before = startedIn(t.before, t.attack);
  const during = startedIn(t.attack, t.end);
  const after = startedIn(t.end, Number.POSITIVE_INFINITY);
  const rssBefore = percentile(
    samples.filter((s) => s.t >= t.before && s.t < t.attack).map((s) => s.mb),
    50,
  );
  let peak: RssSample | undefined;
  for (const s of samples) if (s.t >= t.attack && (!peak || s.mb > peak.mb)) peak = s;
  const rssAfter = samples.at(-1)?.mb ?? Number.NaN;
  // A refusal counts when it was answered: a call begun during the attack may be refused after it.
  const stale = calls.filter(isProofStale);
  const staleAfter = stale.filter((c) => c.end >= t.end);
  const lastStale = staleAfter.at(-1);
  return {
    ...leadFigures(before, "before"),
    ...leadFigures(during, "during"),
    ...leadFigures(after, "after"),
    rss_before_mb: rssBefore,
    rss_peak_mb: peak?.mb ?? Number.NaN,
    rss_peak_at_s: peak ? round((peak.t - t.attack) / 1000, 1) : Number.NaN,
    rss_after_mb: rssAfter,
    rss_back: rssAfter <= rssBefore + RSS_BACK_WITHIN_MB,
    proof_stale_during: stale.filter((c) => c.end >= t.attack && c.end < t.end).length,
    proof_stale_after: staleAfter.length,
    proof_stale_after_s: lastStale ? round((lastStale.end - t.end) / 1000, 2) : 0,
    before_window_s: round((t.attack - t.before) / 1000, 1),
    attack_ended_after_s: round((t.end - t.attack) / 1000, 1),
    after_window_s: round((t.stop - t.end) / 1000, 1),
  };
}

type Figures = Record<string, unknown>;

async function runAttackOnce(attack: AttackName, cfg: FrontDoorConfig, log: (l: string) => void): Promise<Figures> {
  const db = await createScratchDatabase();
  const stateDir = scratchDir("front-door");
  const cleanup = async () => {
    removeScratch(stateDir);
    await db.drop();
  };
  pendingCleanups.add(cleanup);
  const env = { ...process.env, DATABASE_URL: db.url };
  let up: ClankieProcess | undefined;
  let attacker: Attacker | undefined;
  let lead: BenchLead | undefined;
  let rss: ReturnType<typeof sampleRssEvery> | undefined;
  let stopLead = true;
  let loop: Promise<LeadCall[]> | undefined;
  try {
    // Panes off: another engineer's tmux panes on this box must not become seats mid-run.
    const cli = cfg.cli ?? CLI;
    up = await spawnClankie(["up", "--state-dir", stateDir, "--port", "0", "--pane-host", "none"], env, cli);
    await run(process.execPath, [cli, "seat", "add", "mailbox", SEAT, "--state-dir", stateDir, "--json"], { env });
    const mcpUrl = up.ready.mcpUrl!;
    // While slow senders fill the connection table, what matters is whether a NEW connection gets in.
    const fresh = attack === "slow_headers";
    lead = new BenchLead({ mcpUrl, token: up.ready.token!, fresh, timeoutMs: cfg.leadTimeoutMs });
    await lead.open();
    for (let i = 0; i < cfg.warmupCalls; i++) await lead.messageSeat(SEAT, `front door warm-up ${i}`);
    const windowS = cfg.attackS;
    const port = Number(new URL(mcpUrl).port);
    attacker = await startAttacker({ attack, port, windowMs: windowS * 1000, sizes: cfg.sizes });

    rss = sampleRssEvery(up.child.pid!, 200);
    stopLead = false;
    const before = performance.now();
    loop = leadLoop(lead, SEAT, cfg.leadGapMs, () => stopLead);
    await sleep(cfg.beforeS * 1000);
    const attackAt = performance.now();
    log(`front_door.${attack}: attacking for ${windowS} s`);
    const cpu0 = { controller: cpuMsOf(up.child.pid!), attacker: cpuMsOf(attacker.pid) };
    const stats = await attacker.run();
    const end = performance.now();
    const cpuPct = (ms: number) => round((ms / (end - attackAt)) * 100, 1);
    stats.attacker_cpu_pct = cpuPct(cpuMsOf(attacker.pid) - cpu0.attacker);
    stats.controller_cpu_pct = cpuPct(cpuMsOf(up.child.pid!) - cpu0.controller);
    log(`front_door.${attack}: attack over; ${cfg.afterS} s after it`);
    await sleep(cfg.afterS * 1000);
    stopLead = true;
    const calls = await loop;
    rss.stop();
    const marks = { before, attack: attackAt, end, stop: performance.now() };
    return {
      ...figures(calls, rss.samples, marks),
      attack_window_s: windowS,
      lead_connection: fresh ? "fresh per call (Connection: close)" : "kept alive",
      attack: stats,
    };
  } finally {
    stopLead = true;
    rss?.stop();
    attacker?.kill();
    // A lead call stuck on a wedged controller ends with the controller.
    await up?.stop();
    await loop?.catch(() => {});
    lead?.close();
    await cleanup();
    pendingCleanups.delete(cleanup);
  }
}

export async function runFrontDoor(
  cfg: FrontDoorConfig,
  only: readonly AttackName[] = ATTACKS,
  log: (l: string) => void = () => {},
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const attack of only) {
    log(`front_door.${attack}…`);
    try {
      out[attack] = await runAttackOnce(attack, cfg, log);
    } catch (e) {
      out[attack] = `error: ${((e as Error).stack ?? String(e)).slice(0, 2000)}`;
      log(`front_door.${attack} failed: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  return out;
}
