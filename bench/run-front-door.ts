/**
 * `npm run bench:front-door [-- --quick] [-- --only check_flood,rapid_reset] [-- --out FILE]`:
 * runs bench/front-door.ts, writes bench/results/front-door.json (full) or
 * front-door-quick.json, and prints a readable table. Exits non-zero when an attack's run broke.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { ATTACKS, type AttackName } from "./front-door-attacks.js";
import { frontDoorBench, type FrontDoorMode } from "./front-door.js";
import { judgeFrontDoorGoals, renderFrontDoorTable } from "./front-door-report.js";
import { pendingCleanups } from "./sections/front-door.js";
import { REPO_ROOT } from "./paths.js";
import { liveChildren } from "./processes.js";

// An interrupted run must leave no controller, agent or attacker behind, and no database.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of liveChildren) child.kill("SIGKILL");
    void Promise.allSettled([...pendingCleanups].map((c) => c())).finally(() => process.exit(130));
  });
}

async function main(): Promise<number> {
  const flag = { type: "boolean" } as const;
  const text = { type: "string" } as const;
  const { values } = parseArgs({ options: { quick: flag, tiny: flag, only: text, out: text }, strict: true });
  const mode: FrontDoorMode = values.tiny ? "tiny" : values.quick ? "quick" : "full";
  const only = values.only ? values.only.split(",") : [...ATTACKS];
  const unknown = only.filter((a) => !(ATTACKS as readonly string[]).includes(a));
  if (unknown.length) throw new Error(`--only: ${unknown.join(", ")} not among ${ATTACKS.join(", ")}`);
  const file = mode === "full" ? "front-door.json" : `front-door-${mode}.json`;
  const out = resolve(values.out ?? join(REPO_ROOT, "bench", "results", file));
  const r = await frontDoorBench(mode, only as AttackName[], (l) => process.stderr.write(`[front-door] ${l}\n`));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(r, null, 2) + "\n");
  process.stdout.write(renderFrontDoorTable(r, judgeFrontDoorGoals(r)) + "\n\n");
  process.stdout.write(`wrote ${out} (${r.duration_s} s)\n`);
  return r.errors ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench:front-door: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
