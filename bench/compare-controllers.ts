/**
 * `node dist/bench/compare-controllers.js --base OTHER/dist/cli/main.js [--seconds S]
 * [--rounds R] [--after-node-options=--v8-flag] [--after-agent-node-options=--v8-flag] [--out FILE]`:
 * this build's controller against another build's (or the same build with NODE_OPTIONS on this
 * side's controller or agent), side by side
 * in one run (issue 17's before/after). Each side is a real `clankie controller` + `clankie agent` pair on its own
 * PostgreSQL database with 16 mailbox seats; rounds alternate between the sides and flip their
 * order every round. CPU per call (utime+stime of each process, from /proc) is the figure that
 * survives a busy shared box; throughput and latency are printed but move with the load.
 * Writes bench/results/compare-controllers.json (or --out).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createScratchDatabase, type ScratchDatabase } from "./databases.js";
import { startBenchFleet, type BenchFleet } from "./fleet.js";
import { cpuMsOf } from "./processes.js";
import { CLI, REPO_ROOT } from "./paths.js";
import { loopFor } from "./sections/ceiling.js";
import { round } from "./stats.js";
import { runTool } from "./tool-main.js";

interface Side {
  name: string;
  fleet: BenchFleet;
  db: ScratchDatabase;
  acc: Record<
    string,
    {
      calls: number;
      delivered: number;
      controllerCpu: number;
      agentCpu: number;
      ms: number;
      refused: Record<string, number>;
    }
  >;
}

let sent = 0;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      base: { type: "string" },
      seconds: { type: "string" },
      rounds: { type: "string" },
      "after-node-options": { type: "string" },
      "after-agent-node-options": { type: "string" },
      out: { type: "string" },
    },
  });
  if (!values.base) throw new Error("--base PATH/dist/cli/main.js is required");
  const seconds = Number(values.seconds ?? 3);
  const rounds = Number(values.rounds ?? 4);
  const sides: Side[] = [];
  for (const [name, cli] of [
    ["before", values.base],
    ["after", CLI],
  ] as const) {
    const db = await createScratchDatabase();
    const fleet = await startBenchFleet({
      databaseUrl: db.url,
      seats: 16,
      cli,
      ...(name === "after" && values["after-node-options"]
        ? { controllerNodeOptions: values["after-node-options"] }
        : {}),
      ...(name === "after" && values["after-agent-node-options"]
        ? { agentNodeOptions: values["after-agent-node-options"] }
        : {}),
    });
    await fleet.openCallers(16);
    sides.push({ name, fleet, db, acc: {} });
  }
  try {
    for (const s of sides)
      await loopFor(
        1000,
        2,
        async (c) => (await s.fleet.deliver(s.fleet.seatIds[c % 16]!, `warm ${++sent}`, c)).outcome === "delivered",
      );
    for (const callers of [1, 16]) {
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? sides : [...sides].reverse();
        for (const s of order) {
          const key = `c${callers}`;
          const a = (s.acc[key] ??= { calls: 0, delivered: 0, controllerCpu: 0, agentCpu: 0, ms: 0, refused: {} });
          const c0 = cpuMsOf(s.fleet.controller.child.pid!);
          const g0 = cpuMsOf(s.fleet.agent.child.pid!);
          let calls = 0;
          const f = await loopFor((seconds * 1000) / rounds, callers, async (caller) => {
            const d = await s.fleet.deliver(s.fleet.seatIds[caller % 16]!, `compare ${++sent}`, caller);
            calls++;
            if (d.outcome !== "delivered")
              a.refused[`${d.outcome}:${d.reason ?? ""}`] = (a.refused[`${d.outcome}:${d.reason ?? ""}`] ?? 0) + 1;
            return d.outcome === "delivered";
          });
          a.controllerCpu += cpuMsOf(s.fleet.controller.child.pid!) - c0;
          a.agentCpu += cpuMsOf(s.fleet.agent.child.pid!) - g0;
          a.calls += calls;
          a.delivered += f.ok;
          a.ms += f.elapsedMs;
        }
      }
    }
    const result: Record<string, unknown> = {
      when: new Date().toISOString(),
      base: values.base,
      seconds_per_level: seconds,
      rounds,
      note: "CPU per call counts every completed call (delivered or refused by the agent's 250 ms gate): each one ran the whole controller path",
    };
    for (const s of sides) {
      const out: Record<string, unknown> = {};
      for (const [k, a] of Object.entries(s.acc)) {
        out[k] = {
          controller_cpu_ms_per_call: round(a.controllerCpu / Math.max(1, a.calls), 2),
          agent_cpu_ms_per_call: round(a.agentCpu / Math.max(1, a.calls), 2),
          delivered_per_s: round(a.delivered / (a.ms / 1000), 1),
          calls: a.calls,
          delivered: a.delivered,
          not_delivered: a.refused,
        };
      }
      result[s.name] = out;
    }
    const file = values.out ?? join(REPO_ROOT, "bench", "results", "compare-controllers.json");
    mkdirSync(join(REPO_ROOT, "bench", "results"), { recursive: true });
    writeFileSync(file, JSON.stringify(result, null, 2) + "\n");
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
  } finally {
    for (const s of sides) {
      await s.fleet.close();
      await s.db.drop();
    }
  }
}

runTool(main);
