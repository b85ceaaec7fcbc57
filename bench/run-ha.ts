/**
 * `npm run bench:ha [-- --quick] [-- --out FILE]`: the high_availability section alone (issue 34),
 * written to bench/results/high-availability.json (full) or high-availability-quick.json, with its goals.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { configFor } from "./config.js";
import { judgeHaGoals, renderHaTable } from "./ha-report.js";
import { REPO_ROOT } from "./paths.js";
import { runFairnessOnly, runHighAvailability } from "./sections/high-availability.js";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean" },
      tiny: { type: "boolean" },
      fairness: { type: "boolean" },
      out: { type: "string" },
    },
    strict: true,
  });
  const mode = values.tiny ? "tiny" : values.quick ? "quick" : "full";
  const out = resolve(
    values.out ??
      join(
        REPO_ROOT,
        "bench",
        "results",
        `high-availability${mode === "full" ? "" : `-${mode}`}${values.fairness ? "-fairness" : ""}.json`,
      ),
  );
  const started = performance.now();
  const r: Record<string, unknown> = { when: new Date().toISOString(), mode };
  let failed = false;
  try {
    const log = (l: string) => process.stderr.write(`[bench:ha] ${l}\n`);
    const cfg = configFor(mode).highAvailability;
    r.high_availability = values.fairness ? await runFairnessOnly(cfg, log) : await runHighAvailability(cfg, log);
  } catch (e) {
    failed = true;
    r.high_availability = `error: ${(e as Error).message}`;
    process.stderr.write(`bench:ha: ${(e as Error).stack}\n`);
  }
  r.duration_s = Math.round((performance.now() - started) / 100) / 10;
  r.goals = judgeHaGoals(r);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(r, null, 2) + "\n");
  process.stdout.write(renderHaTable(r, r.goals as ReturnType<typeof judgeHaGoals>) + "\n\n");
  process.stdout.write(`wrote ${out} (${String(r.duration_s)} s)\n`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench:ha: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
