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
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ATTACKS, type AttackName, type AttackSizes, type AttackStats } from "../front-door-attacks.js";
import type { AttackerArgs, AttackerMessage } from "../front-door-attacker.js";
import { BenchLead, LEAD_TIMEOUT, leadLoop, type LeadCall } from "../front-door-lead.js";
import { createScratchDatabase, type ScratchDatabase } from "../databases.js";
import { CLI, removeScratch, scratchDir } from "../paths.js";
import { rssOf, spawnClankie, track, type ClankieProcess } from "../processes.js";
import { percentile, round } from "../stats.js";

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SEAT = "inbox";
/** "Back" after the attack: VmRSS at most this much above the quiet window's (the peak may be +100 MB). */
export const RSS_BACK_WITHIN_MB = 50;

export interface FrontDoorConfig {
  warmupCalls: number;
  beforeS: number;
  /** The window of every attack but rapid reset, which the issue runs for 5 s. */
  attackS: number;
  rapidResetS: number;
  /** The window after the attack: the RSS at its end is `rss_after_mb`; 60 s in full mode. */
  afterS: number;
  leadGapMs: number;
  leadTimeoutMs: number;
  sizes: AttackSizes;
}

const ISSUE_SIZES: AttackSizes = { checkConcurrency: 64, watchStreams: 8_000, watchStreamsPerConnection: 125, resetConnections: 8, slowConnections: 800, slowDripMs: 3_000 };

export function frontDoorConfig(mode: "full" | "quick" | "tiny"): FrontDoorConfig {
  switch (mode) {
    case "full":
      return { warmupCalls: 10, beforeS: 20, attackS: 20, rapidResetS: 5, afterS: 60, leadGapMs: 20, leadTimeoutMs: 20_000, sizes: ISSUE_SIZES };
    case "quick":
      return { warmupCalls: 5, beforeS: 8, attackS: 10, rapidResetS: 5, afterS: 15, leadGapMs: 20, leadTimeoutMs: 10_000, sizes: ISSUE_SIZES };
    case "tiny":
      return {
        warmupCalls: 2,
        beforeS: 1,
        attackS: 1,
        rapidResetS: 1,
        afterS: 1,
        leadGapMs: 20,
        leadTimeoutMs: 5_000,
        sizes: { checkConcurrency: 8, watchStreams: 64, watchStreamsPerConnection: 16, resetConnections: 2, slowConnections: 40, slowDripMs: 500 },
      };
  }
}

/** Scratch databases not yet dropped: an interrupted run drops them (bench/front-door.ts). */
export const undroppedDatabases = new Set<ScratchDatabase>();

/** The compiled attacker beside this module, or its source through tsx when the bench runs from bench/ (vitest). */
function attackerCommand(): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  const js = join(here, "..", "front-door-attacker.js");
  if (existsSync(js)) return [js];
  return ["--import", "tsx", join(here, "..", "front-door-attacker.ts")];
}

interface Attacker {
  /** Starts the attack and resolves with its figures once its sockets are closed. */
  run(): Promise<AttackStats>;
  kill(): void;
}

async function startAttacker(a: AttackerArgs): Promise<Attacker> {
  const child: ChildProcess = spawn(process.execPath, [...attackerCommand(), JSON.stringify(a)], { stdio: ["ignore", "ignore", "pipe", "ipc"] });
  track(child);
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

async function runAttackOnce(attack: AttackName, cfg: FrontDoorConfig, log: (l: string) => void): Promise<Record<string, unknown>> {
  const db = await createScratchDatabase();
  undroppedDatabases.add(db);
  const stateDir = scratchDir("front-door");
  const env = { ...process.env, DATABASE_URL: db.url };
  let up: ClankieProcess | undefined;
  let attacker: Attacker | undefined;
  let lead: BenchLead | undefined;
  let rss: ReturnType<typeof sampleRssEvery> | undefined;
  let stopLead = true;
  let loop: Promise<LeadCall[]> | undefined;
  try {
    // Panes off: another engineer's tmux panes on this box must not become seats mid-run.
    up = await spawnClankie(["up", "--state-dir", stateDir, "--port", "0", "--pane-host", "none"], env);
    await run(process.execPath, [CLI, "seat", "add", "mailbox", SEAT, "--state-dir", stateDir, "--json"], { env });
    const mcpUrl = up.ready.mcpUrl!;
    const port = Number(new URL(mcpUrl).port);
    // While slow senders fill the connection table, what matters is whether a NEW connection gets in.
    lead = new BenchLead({ mcpUrl, token: up.ready.token!, fresh: attack === "slow_headers", timeoutMs: cfg.leadTimeoutMs });
    await lead.open();
    for (let i = 0; i < cfg.warmupCalls; i++) await lead.messageSeat(SEAT, `front door warm-up ${i}`);
    const windowS = attack === "rapid_reset" ? cfg.rapidResetS : cfg.attackS;
    attacker = await startAttacker({ attack, port, windowMs: windowS * 1000, sizes: cfg.sizes });

    rss = sampleRssEvery(up.child.pid!, 200);
    stopLead = false;
    const tBefore = performance.now();
    const leadNow = lead;
    loop = leadLoop(leadNow, SEAT, cfg.leadGapMs, () => stopLead);
    await sleep(cfg.beforeS * 1000);
    const tAttack = performance.now();
    log(`front_door.${attack}: attacking for ${windowS} s`);
    const stats = await attacker.run();
    const tEnd = performance.now();
    log(`front_door.${attack}: attack over; ${cfg.afterS} s after it`);
    await sleep(cfg.afterS * 1000);
    stopLead = true;
    const calls = await loop;
    rss.stop();
    const tStop = performance.now();

    const between = (a: number, b: number) => calls.filter((c) => c.start >= a && c.start < b);
    const before = between(tBefore, tAttack);
    const during = between(tAttack, tEnd);
    const after = between(tEnd, Number.POSITIVE_INFINITY);
    const rssIn = (a: number, b: number) => rss!.samples.filter((s) => s.t >= a && s.t < b).map((s) => s.mb);
    const rssBefore = percentile(rssIn(tBefore, tAttack), 50);
    const rssPeakSample = rss.samples.filter((s) => s.t >= tAttack).reduce<RssSample | undefined>((m, s) => (!m || s.mb > m.mb ? s : m), undefined);
    const rssAfter = rss.samples.at(-1)!.mb;
    const staleAfter = after.filter(isProofStale);
    const lastStale = staleAfter.at(-1);
    return {
      ...leadFigures(before, "before"),
      ...leadFigures(during, "during"),
      ...leadFigures(after, "after"),
      rss_before_mb: rssBefore,
      rss_peak_mb: rssPeakSample?.mb ?? Number.NaN,
      rss_peak_at_s: rssPeakSample ? round((rssPeakSample.t - tAttack) / 1000, 1) : Number.NaN,
      rss_after_mb: rssAfter,
      rss_back: rssAfter <= rssBefore + RSS_BACK_WITHIN_MB,
      proof_stale_during: during.filter(isProofStale).length,
      proof_stale_after: staleAfter.length,
      proof_stale_after_s: lastStale ? round((lastStale.end - tEnd) / 1000, 2) : 0,
      before_window_s: round((tAttack - tBefore) / 1000, 1),
      attack_window_s: windowS,
      attack_ended_after_s: round((tEnd - tAttack) / 1000, 1),
      after_window_s: round((tStop - tEnd) / 1000, 1),
      lead_connection: attack === "slow_headers" ? "fresh per call (Connection: close)" : "kept alive",
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
    removeScratch(stateDir);
    await db.drop();
    undroppedDatabases.delete(db);
  }
}

export async function runFrontDoor(cfg: FrontDoorConfig, only: readonly AttackName[] = ATTACKS, log: (l: string) => void = () => {}): Promise<Record<string, unknown>> {
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
