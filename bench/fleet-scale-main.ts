/**
 * `npm run bench:fleet-scale [-- --quick] [-- --sizes 10,100,1000] [-- --out FILE]`: the fleet_scale
 * section alone (it is not part of `npm run bench`: at 1,000 agents it takes several minutes and
 * both cores, which would push the other sections' figures around). Writes
 * bench/results/fleet-scale.json (fleet-scale-quick.json with --quick) and prints the table.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { FLEET_SCALE_CONFIG, runFleetScale, type FleetScaleConfig } from "./sections/fleet-scale.js";
import { judgeFleetScaleGoals, renderFleetScale } from "./report.js";
import { REPO_ROOT } from "./paths.js";
import { liveChildren } from "./processes.js";
import { postgresVersion } from "./databases.js";
import { round } from "./stats.js";

// An interrupted run must not leave the controller or the simulators (and their links) behind.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of liveChildren) child.kill("SIGTERM");
    process.exit(130);
  });
}

function commit(): string {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

function openFiles(): string {
  try {
    return execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { quick: { type: "boolean" }, sizes: { type: "string" }, out: { type: "string" } },
    strict: true,
  });
  const mode = values.quick ? "quick" : "full";
  const cfg: FleetScaleConfig = { ...FLEET_SCALE_CONFIG[mode] };
  if (values.sizes) {
    const sizes = values.sizes.split(",").map(Number);
    if (sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 5000))
      throw new Error(`--sizes takes whole numbers from 1 to 5000, got ${values.sizes}`);
    cfg.sizes = [...new Set(sizes)].sort((a, b) => a - b);
  }
  const pg = await postgresVersion();
  if (!pg) throw new Error("fleet_scale needs PostgreSQL (DATABASE_URL, or the local server at 127.0.0.1:5432)");
  const out = resolve(
    values.out ?? join(REPO_ROOT, "bench", "results", mode === "full" ? "fleet-scale.json" : "fleet-scale-quick.json"),
  );
  const started = performance.now();
  const r: Record<string, unknown> = {
    when: new Date().toISOString(),
    mode,
    commit: commit(),
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model ?? "unknown",
      memory_gb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      postgres: pg,
      open_files_limit: openFiles(),
      loadavg_start: loadavg().map((v) => round(v, 2)),
    },
    sizes: cfg,
  };
  mkdirSync(dirname(out), { recursive: true });
  const write = () => writeFileSync(out, JSON.stringify(r, null, 2) + "\n");
  try {
    r.fleet_scale = await runFleetScale(
      cfg,
      (l) => process.stderr.write(`[bench] ${l}\n`),
      (partial) => {
        r.fleet_scale = { ...partial, partial: "the run is still going: sizes measured so far" };
        write();
      },
    );
  } catch (e) {
    // The sizes measured before the failure stay, with why the run stopped.
    if (r.fleet_scale) {
      r.fleet_scale = {
        ...(r.fleet_scale as Record<string, unknown>),
        partial: `stopped: ${(e as Error).message.slice(0, 300)}`,
      };
      write();
    }
    throw e;
  }
  (r.machine as Record<string, unknown>).loadavg_end = loadavg().map((v) => round(v, 2));
  r.duration_s = round((performance.now() - started) / 1000, 1);
  r.goals = judgeFleetScaleGoals(r);
  write();
  process.stdout.write(renderFleetScale(r, judgeFleetScaleGoals(r)) + "\n\n");
  process.stdout.write(`wrote ${out} (${r.duration_s} s)\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench:fleet-scale: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
