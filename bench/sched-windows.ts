/**
 * `node dist/bench/sched-windows.js [--gaps 0,25,475] [--n 60] [--out FILE]`: what the kernel's
 * scheduler saw during deliveries made after an idle spell (issue 17: what bounds
 * `peer.rtt50.agent_p50_minus_rtt_ms`, measured). For each gap, `perf sched record` runs
 * system-wide around `rtt-phases --gap-ms GAP --one-way-ms 0` (one fleet, no hold), and
 * `perf sched timehist` cuts the record into one window per delivery: from the tool's wake after
 * its idle spell to its last run before it sleeps again. Per window and process (the tool with
 * the lead's MCP client, the controller, the agent, PostgreSQL): CPU time on the main thread and
 * on the others, the scheduling delay (woken, waiting for a CPU), and the time both CPUs sat
 * idle (everyone waiting: the disk, a timer). So "slower after an idle spell" splits into more
 * work, waiting for a CPU, or waiting for something else. Needs Linux `perf` with the sched
 * tracepoints (Debian's linux-perf; run as root); not part of `npm run bench`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { REPO_ROOT } from "./paths.js";
import { percentile, round } from "./stats.js";
import { runTool } from "./tool-main.js";

/** One `perf sched timehist` line: a task's run ending at `end` (s) on `cpu`. */
interface Run {
  end: number;
  cpu: number;
  comm: string;
  tid: number;
  pid: number;
  waitMs: number;
  delayMs: number;
  runMs: number;
}

function parseTimehist(text: string): Run[] {
  const runs: Run[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*([\d.]+)\s+\[(\d+)\]\s+(\S.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$/.exec(line);
    if (!m) continue;
    const task = /^(.*)\[(\d+)(?:\/(\d+))?\]$/.exec(m[3]!);
    const tid = task ? Number(task[2]) : -1;
    runs.push({
      end: Number(m[1]),
      cpu: Number(m[2]),
      comm: task ? task[1]! : m[3]!,
      tid,
      pid: task?.[3] ? Number(task[3]) : tid,
      waitMs: Number(m[4]),
      delayMs: Number(m[5]),
      runMs: Number(m[6]),
    });
  }
  return runs;
}

/** Time (ms) in [from, to] (s) during which every CPU was idle. */
function allIdleMs(idle: Map<number, [number, number][]>, from: number, to: number): number {
  const edges: [number, number][] = [];
  for (const spans of idle.values())
    for (const [s, e] of spans) if (e > from && s < to) edges.push([Math.max(s, from), 1], [Math.min(e, to), -1]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let last = from;
  let total = 0;
  for (const [t, d] of edges) {
    if (open === idle.size) total += t - last;
    open += d;
    last = t;
  }
  return total * 1000;
}

function windowsOf(runs: Run[], deliveries: { from: number; to: number }[]) {
  // Processes in the order they first ran: the tool (perf's child), then the controller and the agent it starts.
  const order: number[] = [];
  for (const r of runs) if ((r.comm === "node" || r.comm === "perf-exec") && !order.includes(r.pid)) order.push(r.pid);
  const [tool, controller, agent] = order;
  const role = (r: Run): string => {
    const who =
      r.pid === tool
        ? "tool"
        : r.pid === controller
          ? "controller"
          : r.pid === agent
            ? "agent"
            : r.comm.startsWith("postgres")
              ? "postgres"
              : "other";
    return who === "tool" || who === "controller" || who === "agent"
      ? `${who}.${r.tid === r.pid ? "main" : "threads"}`
      : who;
  };
  const idle = new Map<number, [number, number][]>();
  for (const r of runs)
    if (r.comm === "<idle>") (idle.get(r.cpu) ?? idle.set(r.cpu, []).get(r.cpu)!).push([r.end - r.runMs / 1000, r.end]);
  const busy = runs.filter((r) => r.comm !== "<idle>").sort((a, b) => a.end - b.end);
  const per: Record<string, { cpu: number; delay: number }> = {};
  const walls: number[] = [];
  let allIdle = 0;
  // The first deliveries include the fleet's warm-up.
  const measured = deliveries.slice(5);
  for (const { from, to } of measured) {
    walls.push((to - from) * 1000);
    allIdle += allIdleMs(idle, from, to);
    for (const r of busy) {
      const start = r.end - r.runMs / 1000;
      if (r.end <= from || start >= to + 0.002) continue;
      const k = (per[role(r)] ??= { cpu: 0, delay: 0 });
      // A run's CPU counts for the part inside the window; its wait for a CPU when it began there.
      k.cpu += (Math.min(r.end, to) - Math.max(start, from)) * 1000 * (start < to ? 1 : 0);
      if (start >= from && start <= to) k.delay += r.delayMs;
    }
  }
  const n = measured.length;
  return {
    deliveries: n,
    wall_p50_ms: round(percentile(walls, 50)),
    wall_mean_ms: round(walls.reduce((a, b) => a + b, 0) / n),
    all_cpus_idle_mean_ms: round(allIdle / n),
    cpu_mean_ms: round(Object.values(per).reduce((a, v) => a + v.cpu, 0) / n),
    scheduling_delay_mean_ms: round(Object.values(per).reduce((a, v) => a + v.delay, 0) / n),
    per_process_mean_ms: Object.fromEntries(
      Object.entries(per)
        .sort()
        .map(([k, v]) => [k, { cpu: round(v.cpu / n), scheduling_delay: round(v.delay / n) }]),
    ),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { gaps: { type: "string" }, n: { type: "string" }, out: { type: "string" } },
  });
  const gaps = (values.gaps ?? "0,25,475").split(",").map(Number);
  if (gaps.some((g) => !(g >= 0))) throw new Error("--gaps: each gap is a number of ms, 0 or more");
  if (spawnSync("perf", ["--version"]).status !== 0)
    throw new Error("perf is not installed (Debian: apt-get install linux-perf)");
  const n = values.n ?? "60";
  const dir = mkdtempSync(join(tmpdir(), "clankie-sched-"));
  const result: Record<string, unknown> = { at: new Date().toISOString(), n: Number(n) };
  try {
    for (const gap of gaps) {
      const data = join(dir, `gap-${gap}.data`);
      const phases = join(dir, `gap-${gap}.json`);
      const marks = join(dir, `gap-${gap}-windows.json`);
      execFileSync(
        "perf",
        [
          "sched",
          "record",
          "-k",
          "CLOCK_MONOTONIC",
          "-q",
          "-a",
          "-o",
          data,
          "--",
          process.execPath,
          join(REPO_ROOT, "dist", "bench", "rtt-phases.js"),
          "--n",
          n,
          "--gap-ms",
          String(gap),
          "--one-way-ms",
          "0",
          "--out",
          phases,
          "--windows",
          marks,
        ],
        { stdio: ["ignore", "ignore", "inherit"] },
      );
      const text = execFileSync("perf", ["sched", "timehist", "-i", data], {
        maxBuffer: 1 << 30,
        stdio: ["ignore", "pipe", "ignore"],
      }).toString();
      const deliveries = JSON.parse(readFileSync(marks, "utf8")) as { from: number; to: number }[];
      result[gap === 0 ? "back_to_back" : `after_${gap}ms_idle`] = windowsOf(parseTimehist(text), deliveries);
      process.stderr.write(`[sched-windows] gap ${gap} ms done\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  result.method =
    "perf sched record -a -k CLOCK_MONOTONIC around rtt-phases --one-way-ms 0 --gap-ms GAP, which writes each delivery's start and end on that clock; per delivery (the first 5 left out) and process, the CPU time of the runs inside the window and the scheduling delay of those that began in it; all_cpus_idle: time in the window when every CPU was idle; means over the deliveries";
  const text = JSON.stringify(result, null, 1);
  console.log(text);
  if (values.out) writeFileSync(values.out, `${text}\n`);
}

runTool(main);
