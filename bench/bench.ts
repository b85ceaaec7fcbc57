/**
 * The benchmark: runs every section in one process, side by side, and returns the result
 * object that becomes bench/results/latest.json. A section that cannot run here (no
 * PostgreSQL, no sshd) is reported as "skipped: why"; one that breaks as "error: why".
 */
import { cpus, loadavg, release, totalmem } from "node:os";
import { existsSync, readFileSync } from "node:fs";
import { HAPROXY } from "../verify/ha-cluster.js";
import { join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import { configFor, type Mode } from "./config.js";
import { REPO_ROOT, removeScratch, scratchDir } from "./paths.js";
import { openDatabase } from "../controller/db/open.js";
import { createScratchDatabase, postgresBaseUrl, postgresVersion } from "./databases.js";
import { startSshd, type RunningSshd } from "./sshd.js";
import { startBenchFleet, type BenchFleet } from "./fleet.js";
import { runPeer } from "./sections/peer.js";
import { runJournal } from "./sections/journal.js";
import { pgliteCeiling, postgresCeiling } from "./sections/ceiling.js";
import { runMcp } from "./sections/mcp.js";
import { runMemory } from "./sections/memory.js";
import { runProofs } from "./sections/proofs.js";
import { runLiveness } from "./sections/liveness.js";
import { runUpMemory } from "./sections/up-memory.js";
import { runHighAvailability } from "./sections/high-availability.js";
import { judgeGoals } from "./report.js";
import { judgeHaGoals } from "./ha-report.js";
import { execFileSync } from "node:child_process";

function hasTmux(): boolean {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export type Result = Record<string, unknown>;

export interface BenchOptions {
  mode: Mode;
  log?: (line: string) => void;
}

function load(): number[] {
  return loadavg().map((v) => Math.round(v * 100) / 100);
}

function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}

function version(pkg: string): string {
  try {
    return (
      JSON.parse(readFileSync(join(REPO_ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }
    ).version;
  } catch {
    return "unknown";
  }
}

export async function runBench(o: BenchOptions): Promise<Result> {
  const log = o.log ?? (() => {});
  const cfg = configFor(o.mode);
  const started = performance.now();
  const pg = await postgresVersion();
  const machine: Result = {
    cpu: cpus()[0]?.model ?? "unknown",
    cpus: cpus().length,
    memory_gb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
    postgres: pg ? `PostgreSQL ${pg} at ${redact(postgresBaseUrl())}` : "skipped: no PostgreSQL",
    pglite: `@electric-sql/pglite ${version("@electric-sql/pglite")}`,
    loadavg_start: load(),
    shared:
      "2 cores shared with other engineers' builds and tests during the run: figures are noisy; compare ratios measured side by side",
  };
  const r: Result = { when: new Date().toISOString(), mode: o.mode, machine, sizes: cfg };
  const errors: Record<string, string> = {};
  // Each section's load average at its start and end: on a shared box, a figure is read with the load it was measured at.
  const loadBySection: Record<string, { start: number[]; end?: number[] }> = {};
  machine.loadavg_by_section = loadBySection;
  const section = async <T>(name: string, fn: () => Promise<T>): Promise<T | string> => {
    const t0 = performance.now();
    log(`${name}…`);
    const at: { start: number[]; end?: number[] } = (loadBySection[name] = { start: load() });
    try {
      const v = await fn();
      at.end = load();
      log(`${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      return v;
    } catch (e) {
      const msg = (e as Error).message.split("\n")[0] ?? String(e);
      if (msg.startsWith("skipped:")) return msg;
      errors[name] = (e as Error).stack ?? msg;
      log(`${name} failed: ${msg}`);
      return `error: ${msg}`;
    }
  };

  let sshd: RunningSshd | string;
  try {
    sshd = await startSshd();
  } catch (e) {
    sshd = `skipped: ${(e as Error).message}`;
  }
  const journal: Result = {};
  let refusedInJournal = 0;
  try {
    // PostgreSQL (the production journal) carries the peer path when it is here.
    const pgFleet = async (fn: (fleet: BenchFleet, url: string) => Promise<void>) => {
      const db = await createScratchDatabase();
      const fleet = await startBenchFleet({ databaseUrl: db.url, seats: cfg.seats });
      try {
        await fn(fleet, db.url);
      } finally {
        await fleet.close();
        await db.drop();
      }
    };
    const pgliteFleet = async (fn: (fleet: BenchFleet, pglite: PGlite) => Promise<void>) => {
      const fleet = await startBenchFleet({ databaseUrl: undefined, seats: cfg.seats });
      // The ceiling's own migrated PGlite in this process (the controller's lives in its process).
      const ownDir = scratchDir("pglite-ceiling");
      try {
        const own = await openDatabase({ dataDir: join(ownDir, "pgdata") });
        try {
          await fn(fleet, (own.db as unknown as { $client: PGlite }).$client);
        } finally {
          await own.close();
        }
      } finally {
        await fleet.close();
        removeScratch(ownDir);
      }
    };
    const peerOn = async (fleet: BenchFleet, database: string) => {
      const p = await section("peer", () => runPeer(cfg.peer, fleet, sshd));
      if (typeof p === "string") {
        r.peer = p;
        r.proof_age = p;
      } else {
        r.peer = { ...p.peer, database };
        r.proof_age = p.proof_age;
      }
    };
    if (pg) {
      await section("journal.postgres", () =>
        pgFleet(async (fleet, url) => {
          await peerOn(fleet, "postgres");
          const ceiling = await postgresCeiling(url, Math.max(...cfg.journal.callers));
          try {
            const j = await runJournal(cfg.journal, fleet, ceiling);
            journal.postgres = { ...j.levels, database: `PostgreSQL ${pg}` };
            refusedInJournal += j.refused;
          } finally {
            await ceiling.close();
          }
        }),
      ).then((v) => typeof v === "string" && (journal.postgres = v));
    } else {
      journal.postgres = "skipped: no PostgreSQL";
      r.peer = "skipped: no PostgreSQL (the delay proxy is set through the machine row)";
      r.proof_age = r.peer;
    }
    await section("journal.pglite", () =>
      pgliteFleet(async (fleet, pglite) => {
        const j = await runJournal(cfg.journal, fleet, pgliteCeiling(pglite), "pglite");
        journal.pglite = { ...j.levels, database: machine.pglite };
        refusedInJournal += j.refused;
      }),
    ).then((v) => typeof v === "string" && (journal.pglite = v));
  } finally {
    if (typeof sshd !== "string") await sshd.stop();
  }
  r.journal = journal;
  if (r.proof_age && typeof r.proof_age === "object") {
    const pa = r.proof_age as Result;
    pa.refused_in_journal = refusedInJournal;
    pa.refused = (pa.refused as number) + refusedInJournal;
    // The same figure while 16 callers deliver at once (the journal section's top level).
    const c16 = (journal.postgres as Result | undefined)?.c16 as Result | undefined;
    if (c16 && typeof c16 === "object") pa.c16 = c16.proof_age_ms;
  }

  const mcp = await section("mcp", async () => {
    const byDb: Result = {};
    if (pg) {
      const db = await createScratchDatabase();
      try {
        byDb.postgres = await runMcp(cfg.mcp, db.url);
      } finally {
        await db.drop();
      }
    } else byDb.postgres = "skipped: no PostgreSQL";
    if (cfg.mcp.pglite || !pg) byDb.pglite = await runMcp(cfg.mcp, undefined);
    else byDb.pglite = "skipped: quick mode measures MCP on PostgreSQL only";
    const main = (typeof byDb.postgres === "object" ? byDb.postgres : byDb.pglite) as Result;
    return { ...main, by_database: byDb };
  });
  r.mcp = mcp;

  r.memory = pg
    ? await section("memory", async () => {
        const db = await createScratchDatabase();
        try {
          return await runMemory(cfg.memory, db.url);
        } finally {
          await db.drop();
        }
      })
    : "skipped: no PostgreSQL";

  // The default start as a new user tries it: `clankie up` on PGlite after N deliveries.
  const upMem = await section("memory.up", () => runUpMemory(cfg.upMemory));
  if (typeof r.memory === "object" && r.memory !== null && typeof upMem === "object")
    Object.assign(r.memory as Result, upMem);
  else if (typeof upMem === "object") r.memory = { ...upMem, pg_memory: r.memory };
  else if (typeof r.memory === "object" && r.memory !== null) (r.memory as Result).up_controller_rss_mb = upMem;

  // Real proof providers on a real tmux pane (issue 4's section): the proof age a Codex seat sees.
  r.proofs = hasTmux() ? await section("proofs", () => runProofs(cfg.proofs, log)) : "skipped: no tmux on PATH";

  // Rule 55: a dead agent offline, and its in-flight delivery uncertain, within 10 s.
  r.liveness = await section("liveness", async () => {
    if (!pg) return runLiveness(cfg.liveness, undefined);
    const db = await createScratchDatabase();
    try {
      return await runLiveness(cfg.liveness, db.url);
    } finally {
      await db.drop();
    }
  });

  // Issue 34: three replicas behind HAProxy on a primary and standby (its own private PostgreSQL pair).
  r.high_availability =
    o.mode === "tiny"
      ? "skipped: tiny mode (npm run bench:ha -- --tiny runs it alone)"
      : existsSync(HAPROXY)
        ? await section("high_availability", () => runHighAvailability(cfg.highAvailability, log))
        : `skipped: no HAProxy at ${HAPROXY}`;

  machine.loadavg_end = load();
  r.duration_s = Math.round((performance.now() - started) / 100) / 10;
  // Issue 34's goals live beside the section (ha-report.ts); report.ts stays free of it (no import cycle).
  r.goals = [...judgeGoals(r), ...judgeHaGoals(r)];
  if (Object.keys(errors).length) r.errors = errors;
  return r;
}
