/**
 * Process facts read straight from Linux /proc: a terminal's foreground process group and
 * its members, a process's argv, cwd, environment and start time. Every read can lose a
 * race with an exiting process; that is `undefined`, never a throw.
 */
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import type { PaneProcess } from "./pane-host.js";
import { parseStat } from "../proofs/linux-proc.js";

export interface ProcStat {
  pid: number;
  comm: string;
  /** R, S, D, Z (zombie: exited, not yet reaped), ... */
  state: string;
  ppid: number;
  pgrp: number;
  /** Foreground process group of the process's controlling terminal (-1 when none). */
  tpgid: number;
  /** Clock ticks since boot: with the pid, it names one process lifetime (pid reuse gets a new one). */
  startTime: number;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

export function procStat(pid: number): ProcStat | undefined {
  const text = readText(`/proc/${pid}/stat`);
  const st = text === undefined ? undefined : parseStat(text);
  if (!st) return undefined;
  return { pid, comm: st.name, state: st.state, ppid: st.ppid, pgrp: st.pgrp, tpgid: st.tpgid, startTime: st.startTicks };
}

export function procArgv(pid: number): string[] | undefined {
  const text = readText(`/proc/${pid}/cmdline`);
  if (text === undefined) return undefined;
  return text.split("\0").filter((s, i, all) => s.length > 0 || i < all.length - 1);
}

export function procCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/** The process's environment; undefined when it cannot be read (gone, or another user's). */
export function procEnv(pid: number): Record<string, string> | undefined {
  const text = readText(`/proc/${pid}/environ`);
  if (text === undefined) return undefined;
  const env: Record<string, string> = {};
  for (const entry of text.split("\0")) {
    const eq = entry.indexOf("=");
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

export function allPids(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

/** Members of process group `pgid`, as pane processes (name, argv, cwd). */
export function processGroupMembers(pgid: number): PaneProcess[] {
  const out: PaneProcess[] = [];
  for (const pid of allPids()) {
    const st = procStat(pid);
    // A zombie has exited: it runs nothing in the pane any more.
    if (!st || st.pgrp !== pgid || st.state === "Z") continue;
    const argv = procArgv(pid);
    if (!argv) continue;
    out.push({ pid, name: st.comm, argv, cwd: procCwd(pid) });
  }
  return out.sort((a, b) => a.pid - b.pid);
}

/** The foreground process group of the terminal that `shellPid` belongs to. */
export function foregroundGroupOf(shellPid: number): number | undefined {
  const st = procStat(shellPid);
  if (!st || st.tpgid <= 0) return undefined;
  return st.tpgid;
}
