/**
 * `npm run bench [-- --quick] [-- --out FILE]`: runs the benchmark, writes the result file
 * (bench/results/latest.json for a full run, bench/results/quick.json for a quick one) and
 * prints a readable table. Exits non-zero only when a section broke, not when one was skipped.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { runBench } from "./bench.js";
import { renderTable, type Goal } from "./report.js";
import { REPO_ROOT } from "./paths.js";
import { liveChildren } from "./processes.js";

// An interrupted run must not leave controllers, agents or sshd behind.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of liveChildren) child.kill("SIGTERM");
    process.exit(130);
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { quick: { type: "boolean" }, tiny: { type: "boolean" }, out: { type: "string" } },
    strict: true,
  });
  const mode = values.tiny ? "tiny" : values.quick ? "quick" : "full";
  const out = resolve(
    values.out ?? join(REPO_ROOT, "bench", "results", mode === "full" ? "latest.json" : `${mode}.json`),
  );
  const result = await runBench({ mode, log: (l) => process.stderr.write(`[bench] ${l}\n`) });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
  process.stdout.write(renderTable(result, result.goals as Goal[]) + "\n\n");
  process.stdout.write(`wrote ${out} (${result.duration_s} s)\n`);
  return result.errors ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
