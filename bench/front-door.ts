/**
 * Issue 32's front door under attack (bench/sections/front-door.ts) as one result object:
 * the machine, the sizes, each attack's figures and the goals. Apart from `npm run bench` on
 * purpose: it takes ~7 min in full mode, and an attacked controller's aftermath must never
 * reach the other sections' figures. The program is bench/run-front-door.ts.
 */
import { cpus, loadavg, release, totalmem } from "node:os";
import { ATTACKS, type AttackName } from "./front-door-attacks.js";
import { judgeFrontDoorGoals } from "./front-door-report.js";
import { frontDoorConfig, runFrontDoor } from "./sections/front-door.js";
import { postgresVersion } from "./databases.js";

export type FrontDoorMode = "full" | "quick" | "tiny";

const load = () => loadavg().map((v) => Math.round(v * 100) / 100);

function machine(pg: string | undefined): Record<string, unknown> {
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cpus: cpus().length,
    memory_gb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
    postgres: pg ? `PostgreSQL ${pg}` : "skipped: no PostgreSQL",
    loadavg_start: load(),
  };
}

export async function frontDoorBench(
  mode: FrontDoorMode,
  only: readonly AttackName[] = ATTACKS,
  log: (l: string) => void = () => {},
): Promise<Record<string, unknown>> {
  const started = performance.now();
  const cfg = frontDoorConfig(mode);
  const pg = await postgresVersion();
  const box = machine(pg);
  const r: Record<string, unknown> = { when: new Date().toISOString(), mode, machine: box, sizes: cfg };
  const skipped = "skipped: no PostgreSQL (the section runs `clankie up` on PostgreSQL)";
  r.front_door = pg ? await runFrontDoor(cfg, only, log) : Object.fromEntries(only.map((a) => [a, skipped]));
  box.loadavg_end = load();
  r.duration_s = Math.round((performance.now() - started) / 100) / 10;
  r.goals = judgeFrontDoorGoals(r);
  const broke = (v: unknown) => typeof v === "string" && v.startsWith("error:");
  const errors = Object.entries(r.front_door as Record<string, unknown>).filter(([, v]) => broke(v));
  if (errors.length) r.errors = Object.fromEntries(errors);
  return r;
}
