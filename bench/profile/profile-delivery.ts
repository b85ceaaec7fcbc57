/**
 * `node dist/bench/profile/profile-delivery.js [--callers 1,16] [--seconds 8] [--out FILE]`:
 * where the controller's and the agent's time and allocations go on one delivery (issue 17).
 * A real controller + agent pair on a scratch PostgreSQL database (the bench fleet), both run
 * through profiled-cli.ts; after a warm-up, V8's CPU profiler and sampling heap profiler run
 * over the measured calls only. Prints and writes, per process and caller count: CPU ms and
 * bytes allocated per call, split by where the code lives (a repository directory, a package,
 * or Node's own internals), and the top functions by self time. The raw profiles (open them in
 * Chrome's DevTools) are kept in .tmp/bench/profiles/.
 */
import { mkdirSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createScratchDatabase } from "../databases.js";
import { startBenchFleet } from "../fleet.js";
import { CACHE_DIR, REPO_ROOT } from "../paths.js";
import { cpuMsOf } from "../processes.js";
import { loopFor } from "../sections/ceiling.js";
import { round } from "../stats.js";
import {
  byFunction,
  byPlace,
  type CpuProfile,
  type HeapProfile,
  cpuByPlace,
  allocatedByPlace,
} from "./profile-summary.js";
import { runTool } from "../tool-main.js";

// CPU per call is the process's (from /proc, with the profilers' own overhead in it); the
// split by place is by sample count, allocations by the sampling heap profiler.
const WRAPPER = join(REPO_ROOT, "dist", "bench", "profile", "profiled-cli.js");

async function waitForFile(path: string): Promise<void> {
  for (let i = 0; i < 200 && !existsSync(path); i++) await new Promise((r) => setTimeout(r, 100));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { callers: { type: "string" }, seconds: { type: "string" }, out: { type: "string" } },
  });
  const levels = (values.callers ?? "1,16").split(",").map(Number);
  const seconds = Number(values.seconds ?? 8);
  const out = values.out ?? join(REPO_ROOT, "bench", "results", "profile-delivery.json");
  // The raw profiles are large: kept out of git, beside the downloaded sshd.
  const profileDir = join(CACHE_DIR, "profiles");
  mkdirSync(profileDir, { recursive: true });
  const result: Record<string, unknown> = {
    when: new Date().toISOString(),
    seconds_per_level: seconds,
    load_average: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
  };
  let sent = 0;
  for (const callers of levels) {
    const dir = join(profileDir, `c${callers}`);
    mkdirSync(dir, { recursive: true });
    process.env.CLANKIE_PROFILE_DIR = dir;
    const db = await createScratchDatabase();
    const fleet = await startBenchFleet({ databaseUrl: db.url, seats: 16, cli: WRAPPER });
    try {
      await fleet.openCallers(callers);
      const call = async (c: number, tag: string) =>
        (await fleet.deliver(fleet.seatIds[c % 16]!, `${tag} ${++sent}`, c)).outcome === "delivered";
      await loopFor(2000, callers, (c) => call(c, "warm"));
      const pids = { controller: fleet.controller.child.pid!, agent: fleet.agent.child.pid! };
      const cpu0 = { controller: cpuMsOf(pids.controller), agent: cpuMsOf(pids.agent) };
      for (const pid of Object.values(pids)) process.kill(pid, "SIGUSR2");
      let calls = 0;
      const f = await loopFor(seconds * 1000, callers, async (c) => {
        calls++;
        return call(c, "profile");
      });
      for (const pid of Object.values(pids)) process.kill(pid, "SIGUSR2");
      const level: Record<string, unknown> = {
        calls,
        delivered: f.ok,
        delivered_per_s: round(f.ok / (f.elapsedMs / 1000), 1),
      };
      for (const [role, pid] of Object.entries(pids)) {
        const cpuMs = cpuMsOf(pid) - cpu0[role as keyof typeof cpu0];
        const base = join(dir, `${role}-${pid}`);
        await waitForFile(`${base}.heapprofile`);
        const cpu = JSON.parse(readFileSync(`${base}.cpuprofile`, "utf8")) as CpuProfile;
        const heap = JSON.parse(readFileSync(`${base}.heapprofile`, "utf8")) as HeapProfile;
        const cpuPerCall = cpuMs / Math.max(1, calls);
        const places = byPlace(cpuByPlace(cpu), allocatedByPlace(heap), calls, cpuPerCall);
        level[role] = {
          cpu_ms_per_call: round(cpuPerCall, 2),
          allocated_kb_per_call: round(
            places.reduce((s, p) => s + p.allocated_kb_per_call, 0),
            1,
          ),
          by_place: places.slice(0, 24),
          top_functions: byFunction(cpu, cpuPerCall).slice(0, 20),
        };
      }
      result[`c${callers}`] = level;
      console.log(JSON.stringify({ [`c${callers}`]: level }, null, 1));
    } finally {
      await fleet.close();
      await db.drop();
    }
  }
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${out}`);
}

runTool(main);
