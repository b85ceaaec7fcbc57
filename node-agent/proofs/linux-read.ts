/**
 * The Linux provider's reads of /proc, one per kernel file, each answering the parsed value
 * or a typed failure (a vanished pid is pid_gone, a refused read permission). Kept apart from
 * linux.ts so the provider class stays about which facts it proves, not how files are read.
 * This folder's linux*.ts files are the only ones in the project that read /proc.
 */
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { parseEnviron, parseStat, socketInode, type ProcStat } from "./linux-proc.js";
import type { ProcessIdentity, UnknownReason } from "./provider.js";

export type Failure = { reason: UnknownReason; detail: string };
export const isFailure = (x: unknown): x is Failure =>
  typeof x === "object" && x !== null && "reason" in x && "detail" in x && !(x instanceof Map) && !Array.isArray(x);

/** errno → the typed reason: a vanished pid is pid_gone, a refused read is permission. */
export function reasonOf(e: unknown, what: string): Failure {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ESRCH")
    return { reason: "pid_gone", detail: `${what}: the process no longer exists` };
  if (code === "EACCES" || code === "EPERM")
    return { reason: "permission", detail: `${what}: not readable by this agent (${code})` };
  return { reason: "race", detail: `${what}: ${code ?? (e as Error).message}` };
}

export function readStat(pid: number): ProcStat | Failure {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (e) {
    return reasonOf(e, `pid ${pid}`);
  }
  const stat = parseStat(text);
  if (!stat) return { reason: "race", detail: `pid ${pid}: /proc/${pid}/stat was not in the expected form` };
  // A zombie has exited; only its exit status is left to collect.
  if (stat.state === "Z" || stat.state === "X")
    return { reason: "pid_gone", detail: `pid ${pid} has exited (state ${stat.state})` };
  return stat;
}

/** The recorded lifetime still runs: same pid, same start ticks. A reused pid fails here. */
export function checkIdentity(p: ProcessIdentity): ProcStat | Failure {
  const s = readStat(p.pid);
  if (isFailure(s)) return s;
  if (s.startTicks !== p.startTime) {
    return {
      reason: "pid_gone",
      detail: `pid ${p.pid} now belongs to another process (start ${s.startTicks}, recorded ${p.startTime})`,
    };
  }
  return s;
}

export function socketInodes(pid: number | "self"): Set<number> | Failure {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (e) {
    return reasonOf(e, `pid ${pid} open files`);
  }
  const inodes = new Set<number>();
  for (const fd of fds) {
    try {
      const inode = socketInode(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (inode !== undefined) inodes.add(inode);
    } catch {
      // The descriptor closed between readdir and readlink: it holds nothing now.
    }
  }
  return inodes;
}

export function readNet(pid: number | "self", file: "tcp" | "tcp6" | "unix"): string | Failure {
  try {
    return readFileSync(`/proc/${pid}/net/${file}`, "utf8");
  } catch (e) {
    // A kernel built without IPv6 has no tcp6: that is an empty table, not an unknown.
    if (file === "tcp6" && (e as NodeJS.ErrnoException).code === "ENOENT" && pid === "self") return "";
    return reasonOf(e, `pid ${pid} /net/${file}`);
  }
}

/** argv from /proc/PID/cmdline (NUL-separated; a kernel thread's is empty). */
export function readCmdline(pid: number): string[] | Failure {
  try {
    const text = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return text.split("\0").filter((s, i, all) => s.length > 0 || i < all.length - 1);
  } catch (e) {
    return reasonOf(e, `pid ${pid} command line`);
  }
}

export function readCwd(pid: number): string | Failure {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch (e) {
    return reasonOf(e, `pid ${pid} working directory`);
  }
}

export function readEnviron(pid: number): Map<string, string> | Failure {
  try {
    return parseEnviron(readFileSync(`/proc/${pid}/environ`, "utf8"));
  } catch (e) {
    return reasonOf(e, `pid ${pid} environment`);
  }
}

export function allPids(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}
