/**
 * `node dist/bench/compare-journal.js --base OTHER/dist/cli/main.js [--repeats N] [--out FILE]`:
 * the full bench's journal section on PostgreSQL (`runJournal` with the full run's levels, rounds
 * and raw ceiling, on its own scratch database and fleet) for another build and this one, in
 * alternation with the order flipped each repeat, so issue 17's goal keys
 * (`journal.postgres.cN.controller_cpu_ms_per_delivery`, `…agent_cpu_ms_per_delivery`,
 * `…ratio`) are measured side by side the way `npm run bench` measures them. The peer section
 * that precedes the journal in the full run is not run here. Writes
 * bench/results/compare-journal.json (or --out).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { configFor } from "./config.js";
import { createScratchDatabase } from "./databases.js";
import { startBenchFleet } from "./fleet.js";
import { CLI, REPO_ROOT } from "./paths.js";
import { postgresCeiling } from "./sections/ceiling.js";
import { runJournal } from "./sections/journal.js";
import { runTool } from "./tool-main.js";

async function journalOnce(cli: string): Promise<Record<string, unknown>> {
  const cfg = configFor("full").journal;
  const db = await createScratchDatabase();
  const fleet = await startBenchFleet({ databaseUrl: db.url, seats: 16, cli });
  const ceiling = await postgresCeiling(db.url, Math.max(...cfg.callers));
  try {
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    return { load_average_at_start: load, ...(await runJournal(cfg, fleet, ceiling)).levels };
  } finally {
    await ceiling.close();
    await fleet.close();
    await db.drop();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { base: { type: "string" }, repeats: { type: "string" }, out: { type: "string" } },
  });
  if (!values.base) throw new Error("--base PATH/dist/cli/main.js is required");
  const repeats = Number(values.repeats ?? 2);
  const runs: { before: Record<string, unknown>[]; after: Record<string, unknown>[] } = { before: [], after: [] };
  for (let r = 0; r < repeats; r++) {
    const order: ["before" | "after", string][] = [
      ["before", values.base],
      ["after", CLI],
    ];
    if (r % 2 === 1) order.reverse();
    for (const [side, cli] of order) {
      const j = await journalOnce(cli);
      runs[side].push(j);
      process.stdout.write(`${JSON.stringify({ repeat: r, side, ...j })}\n`);
    }
  }
  const result = {
    when: new Date().toISOString(),
    base: values.base,
    repeats,
    note: "the full bench's journal section (PostgreSQL), each side on its own fleet and database, alternating; CPU per delivery divides by delivered calls",
    ...runs,
  };
  const file = values.out ?? join(REPO_ROOT, "bench", "results", "compare-journal.json");
  mkdirSync(join(REPO_ROOT, "bench", "results"), { recursive: true });
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
}

runTool(main);
