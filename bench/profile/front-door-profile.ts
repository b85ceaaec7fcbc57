/**
 * `node dist/bench/profile/front-door-profile.js [--quick] [--only a,b] [--after S] [--cpu-profile]
 * [--base OTHER/dist/cli/main.js] [--rounds N]`:
 * the front-door section (bench/sections/front-door.ts) with the controller describing itself
 * (bench/profile/process-probe.ts), so an attack's cost is shown in counts that a shared box
 * moves less than a p99: the controller's CPU ms per second and its event-loop delay in each
 * window, and its memory split (V8 heap, external, array buffers, the rest of the RSS) before,
 * at the RSS peak and at the end. With `--base`, each attack runs against that build's
 * controller and this build's in turn (N rounds, the order flipped every round), so the two are
 * compared under the same load. Prints one JSON object; writes nothing in the tree.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ATTACKS, type AttackName } from "../front-door-attacks.js";
import { frontDoorConfig, runFrontDoor, type FrontDoorConfig } from "../sections/front-door.js";
import { percentile, round } from "../stats.js";

interface Sample {
  t: number;
  eld_p50_ms: number;
  eld_p99_ms: number;
  eld_max_ms: number;
  cpu_ms: number;
  rss_mb: number;
  heap_used_mb: number;
  heap_total_mb: number;
  external_mb: number;
  array_buffers_mb: number;
}

function windowFigures(s: Sample[]): Record<string, number> {
  if (!s.length) return {};
  const seconds = (s.length * 250) / 1000;
  return {
    cpu_ms_per_s: round(s.reduce((a, x) => a + x.cpu_ms, 0) / seconds),
    eld_p99_of_p99_ms: round(
      percentile(
        s.map((x) => x.eld_p99_ms),
        99,
      ),
    ),
    eld_median_p99_ms: round(
      percentile(
        s.map((x) => x.eld_p99_ms),
        50,
      ),
    ),
    eld_max_ms: round(Math.max(...s.map((x) => x.eld_max_ms))),
  };
}

const memory = (x: Sample | undefined) =>
  x && {
    rss: x.rss_mb,
    heap_used: x.heap_used_mb,
    heap_total: x.heap_total_mb,
    external: x.external_mb,
    array_buffers: x.array_buffers_mb,
    rest_of_rss: round(x.rss_mb - x.heap_total_mb - x.external_mb),
  };

/** The figures that tell a run apart, on one line. */
function brief(r: unknown): unknown {
  const x = r as Record<string, Record<string, unknown>>;
  return x.during
    ? {
        p99: [x.lead_p99_before_ms, x.lead_p99_during_ms],
        rss: x.rss,
        cpu: x.during.cpu_ms_per_s,
        eld: x.during.eld_p99_of_p99_ms,
        first_3s: x.during_first_3s,
      }
    : r;
}

async function profileOne(cfg: FrontDoorConfig, attack: AttackName, dir: string): Promise<unknown> {
  const marks = { attack: Number.NaN, end: Number.NaN };
  const known = new Set(readdirSync(dir));
  const r = await runFrontDoor(cfg, [attack], (l) => {
    process.stderr.write(`[front-door] ${l}\n`);
    if (/: attacking/.test(l)) marks.attack = Date.now();
    if (/: attack over/.test(l)) marks.end = Date.now();
  });
  const fig = r[attack] as Record<string, unknown> | string;
  const file = readdirSync(dir).find((f) => f.startsWith("probe-") && !known.has(f));
  if (!file || typeof fig === "string") return { error: typeof fig === "string" ? fig.slice(0, 300) : "no probe file" };
  const samples = readFileSync(join(dir, file), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Sample);
  const inWin = (a: number, b: number) => samples.filter((x) => x.t > a && x.t <= b);
  const before = inWin(marks.attack - cfg.beforeS * 1000, marks.attack);
  const during = inWin(marks.attack, marks.end);
  const after = inWin(marks.end, Number.POSITIVE_INFINITY);
  const peak = samples.filter((x) => x.t > marks.attack).reduce((a, x) => (x.rss_mb > a.rss_mb ? x : a));
  return {
    lead_p99_before_ms: fig.lead_p99_before_ms,
    lead_p99_during_ms: fig.lead_p99_during_ms,
    lead_p50_during_ms: fig.lead_p50_during_ms,
    lead_errors_during: fig.lead_errors_during,
    rss: [fig.rss_before_mb, fig.rss_peak_mb, fig.rss_after_mb],
    before: windowFigures(before),
    during: windowFigures(during),
    // A flood's work comes at its start and at its holds' ends; a 20 s mean hides it.
    during_first_3s: windowFigures(inWin(marks.attack, marks.attack + 3_000)),
    after: windowFigures(after),
    memory_before: memory(before[Math.floor(before.length / 2)]),
    memory_peak: { at_s: round((peak.t - marks.attack) / 1000, 1), ...memory(peak) },
    memory_end: memory(samples.at(-1)),
    attack: fig.attack,
  };
}

async function main(): Promise<void> {
  const flag = { type: "boolean" } as const;
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    options: { quick: flag, only: text, after: text, "cpu-profile": flag, keep: flag, base: text, rounds: text },
    strict: true,
  });
  const cfg = frontDoorConfig(values.quick ? "quick" : "full");
  if (values.after) cfg.afterS = Number(values.after);
  const only = (values.only ? values.only.split(",") : [...ATTACKS]) as AttackName[];
  const dir = mkdtempSync(join(tmpdir(), "clankie-probe-"));
  const probe = join(dirname(fileURLToPath(import.meta.url)), "process-probe.js");
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --import ${probe}`.trim();
  process.env.CLANKIE_PROBE_DIR = dir;
  if (values["cpu-profile"]) process.env.CLANKIE_PROBE_CPU_PROFILE = "1";
  const out: Record<string, unknown> = { dir, cfg: { ...cfg, sizes: undefined } };
  const sides: [string, string | undefined][] = values.base
    ? [
        ["base", values.base],
        ["this", undefined],
      ]
    : [["this", undefined]];
  const rounds = Number(values.rounds ?? 1);
  for (let n = 0; n < rounds; n++) {
    const order = n % 2 ? [...sides].reverse() : sides;
    for (const attack of only) {
      for (const [name, cli] of order) {
        const key = `${attack}.${name}.${n}`;
        out[key] = await profileOne({ ...cfg, cli }, attack, dir);
        process.stderr.write(`${key}: ${JSON.stringify(brief(out[key]))}\n`);
      }
    }
  }
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  if (!values.keep && !values["cpu-profile"]) rmSync(dir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
