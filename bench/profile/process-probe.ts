/**
 * A preload (`NODE_OPTIONS="--import <dist>/bench/profile/process-probe.js"`) that makes a
 * `clankie up` or `clankie controller` process describe itself every 250 ms as one JSON line
 * in `$CLANKIE_PROBE_DIR/probe-<pid>.jsonl`: event-loop delay over the interval (p50, p99,
 * max), CPU used in it, and memory split as V8 sees it (heap used/total, external, array
 * buffers) beside the RSS. With `CLANKIE_PROBE_CPU_PROFILE=1` it also writes a CPU profile of
 * its whole life at exit. Other processes that inherit NODE_OPTIONS (the agent, the CLI) are
 * left alone. Used by bench/profile/front-door-profile.ts.
 */
import { Session } from "node:inspector";
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";

const role = process.argv[2];
const dir = process.env.CLANKIE_PROBE_DIR;
if (dir && (role === "up" || role === "controller")) start(dir);

function start(out: string): void {
  const file = join(out, `probe-${process.pid}.jsonl`);
  const eld = monitorEventLoopDelay({ resolution: 5 });
  eld.enable();
  let cpu = process.cpuUsage();
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  const mb = (b: number) => Math.round(b / 1e5) / 10;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    const c = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    const line = {
      t: Date.now(),
      eld_p50_ms: ms(eld.percentile(50)),
      eld_p99_ms: ms(eld.percentile(99)),
      eld_max_ms: ms(eld.max),
      cpu_ms: Math.round((c.user + c.system) / 1000),
      rss_mb: mb(m.rss),
      heap_used_mb: mb(m.heapUsed),
      heap_total_mb: mb(m.heapTotal),
      external_mb: mb(m.external),
      array_buffers_mb: mb(m.arrayBuffers),
    };
    eld.reset();
    appendFileSync(file, JSON.stringify(line) + "\n");
  }, 250);
  timer.unref();
  if (process.env.CLANKIE_PROBE_CPU_PROFILE === "1") {
    const session = new Session();
    session.connect();
    session.post("Profiler.enable");
    session.post("Profiler.setSamplingInterval", { interval: 500 });
    session.post("Profiler.start");
    const stop = () => {
      session.post("Profiler.stop", (err, res) => {
        if (!err) writeFileSync(join(out, `controller-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
      });
    };
    // The in-process inspector answers synchronously, so the profile is written before the exit.
    process.once("SIGUSR2", stop);
    process.once("exit", stop);
  }
}
