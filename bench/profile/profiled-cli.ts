/**
 * `node dist/bench/profile/profiled-cli.js ARGS`: the real `clankie` CLI with V8's own profilers
 * attached in process (the inspector), so a profile covers only the measured calls and not the
 * start-up. The first SIGUSR2 starts the CPU profiler and the sampling heap profiler (counting
 * objects already collected too, so its total is what was allocated, not what survived); the
 * second stops both and writes `<role>-<pid>.cpuprofile` and `.heapprofile` to
 * CLANKIE_PROFILE_DIR. Used by bench/profile/profile-delivery.ts only.
 */
import { Session } from "node:inspector";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLI } from "../paths.js";

const dir = process.env.CLANKIE_PROFILE_DIR ?? ".";
const role = process.argv[2] ?? "clankie";
const session = new Session();
session.connect();
let running = false;

// The in-process inspector answers synchronously, so a signal handler can start and stop it.
function post<T>(method: string, params?: object): T {
  let out: T | undefined;
  session.post(method, params, (err, res) => {
    if (err) throw err;
    out = res as T;
  });
  return out as T;
}

process.on("SIGUSR2", () => {
  if (!running) {
    post("Profiler.enable");
    post("Profiler.setSamplingInterval", { interval: 200 });
    post("Profiler.start");
    post("HeapProfiler.enable");
    post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    running = true;
    return;
  }
  const { profile } = post<{ profile: unknown }>("Profiler.stop");
  const heap = post<{ profile: unknown }>("HeapProfiler.stopSampling");
  writeFileSync(join(dir, `${role}-${process.pid}.cpuprofile`), JSON.stringify(profile));
  writeFileSync(join(dir, `${role}-${process.pid}.heapprofile`), JSON.stringify(heap.profile));
  running = false;
});

// The CLI reads process.argv from index 2, as when it is run directly.
await import(CLI);
