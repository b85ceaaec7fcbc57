/** Real `clankie` processes for the bench, and their resident memory read from /proc. */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { createInterface } from "node:readline";
import { CLI } from "./paths.js";

/** Every child the bench started and has not seen exit: stopped by pid if the run is interrupted. */
export const liveChildren = new Set<ChildProcess>();

export function track(child: ChildProcess): void {
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
}

export interface ClankieProcess {
  child: ChildProcess;
  /** The first stdout line, parsed (every `--json` long-running command prints one when ready). */
  ready: Record<string, string>;
  stderr(): string;
  stop(): Promise<void>;
}

/** Spawns `node dist/cli/main.js ARGS --json` and waits for its ready line. */
export async function spawnClankie(args: string[], env: NodeJS.ProcessEnv, cli = CLI): Promise<ClankieProcess> {
  const readyKey = args[0] === "agent" ? "endpoint" : "mcpUrl";
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run 'npm run build' first (npm run bench does)`);
  const child = spawn(process.execPath, [cli, ...args, "--json"], { env, stdio: ["ignore", "pipe", "pipe"] });
  track(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<Record<string, string>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`clankie ${args[0]} not ready in 90 s: ${stderr}`)), 90_000);
    // The ready line is the first JSON object naming `readyKey`; anything before it is skipped.
    lines.on("line", (line) => {
      let parsed: Record<string, string> | undefined;
      try {
        parsed = JSON.parse(line) as Record<string, string>;
      } catch {
        return;
      }
      if (typeof parsed?.[readyKey] !== "string") return;
      clearTimeout(timer);
      resolve(parsed);
    });
    child.once("exit", (code) => reject(new Error(`clankie ${args[0]} exited with ${code}: ${stderr}`)));
  });
  return {
    child,
    ready,
    stderr: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const hard = setTimeout(() => child.kill("SIGKILL"), 10_000);
        child.once("exit", () => {
          clearTimeout(hard);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}

/** VmRSS and VmHWM (peak RSS) of a live process, in MB. */
export function rssOf(pid: number): { rss_mb: number; peak_rss_mb: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return {
    rss_mb: Math.round((kb("VmRSS") / 1024) * 10) / 10,
    peak_rss_mb: Math.round((kb("VmHWM") / 1024) * 10) / 10,
  };
}

/** Samples RSS every `everyMs` for `forMs`; returns the largest current RSS seen and the kernel's peak. */
export async function sampleRss(
  pid: number,
  forMs: number,
  everyMs = 250,
): Promise<{ rss_mb: number; max_rss_mb: number; peak_rss_mb: number }> {
  let max = 0;
  let last = rssOf(pid);
  const end = Date.now() + forMs;
  do {
    last = rssOf(pid);
    max = Math.max(max, last.rss_mb);
    await new Promise((r) => setTimeout(r, everyMs));
  } while (Date.now() < end);
  return { rss_mb: last.rss_mb, max_rss_mb: max, peak_rss_mb: rssOf(pid).peak_rss_mb };
}

/** CPU time (user + system) a live process has used so far, in ms, from /proc/<pid>/stat. */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}

/**
 * CPU time every PostgreSQL server process on this box has used so far (backends, WAL writer,
 * checkpointer: the database's whole cost of a workload), in ms. The bench is the box's only
 * client while it runs; a process that exits between two readings drops its share.
 */
export function postgresCpuMs(): number {
  let ms = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, "utf8").trim() === "postgres") ms += cpuMsOf(Number(name));
    } catch {
      // Gone since the listing.
    }
  }
  return ms;
}

/**
 * The whole box's CPU time so far (every core), in ms, from /proc/stat: `busy` is all this
 * machine ran (user, nice, system, irq, softirq; guest time is already in user), `stolen` the
 * time the hypervisor gave these virtual cores to someone else. A run with steal in it measured
 * a busier host, not slower code.
 */
export function boxCpuMs(): { busy: number; stolen: number } {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return {
    busy: ((cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]!) * 1000) / CLOCK_TICKS,
    stolen: ((cpu[7] ?? 0) * 1000) / CLOCK_TICKS,
  };
}

// USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
const CLOCK_TICKS = 100;

/** The box's count of connections dropped because a listener's accept queue was full (/proc/net/netstat). */
export function listenOverflows(): number {
  const lines = readFileSync("/proc/net/netstat", "utf8")
    .split("\n")
    .filter((l) => l.startsWith("TcpExt:"));
  const [names, values] = lines.map((l) => l.trim().split(/\s+/));
  const i = names?.indexOf("ListenOverflows") ?? -1;
  return i < 0 ? Number.NaN : Number(values?.[i]);
}

/**
 * The simulators' connections to the agent port, from `ss`: how many are established, and how
 * many of those still hold unacknowledged bytes (a TLS hello the listener never took off its
 * queue, waiting on TCP's retransmissions).
 */
export function agentPortSockets(port: string): { established: number; unacked: number } | string {
  try {
    const out = execFileSync("ss", ["-Htn", "state", "established", `( dport = :${port} )`], { encoding: "utf8" });
    const rows = out.split("\n").filter((l) => l.trim());
    return { established: rows.length, unacked: rows.filter((l) => Number(l.trim().split(/\s+/)[1]) > 0).length };
  } catch (e) {
    return `ss failed: ${(e as Error).message.slice(0, 100)}`;
  }
}
