/**
 * Pure parsers for what the Windows PowerShell host answers: `Get-CimInstance Win32_Process`
 * and `Get-NetTCPConnection` as ConvertTo-Json writes them (Windows PowerShell 5.1 and 7),
 * the host's own process-detail record (cwd and environment read from the process's PEB), and
 * a command line split the way CommandLineToArgvW splits it. No I/O: each is tested on
 * recorded text. Start times are integer microseconds since the Unix epoch: the precision
 * both Win32_Process.CreationDate and GetProcessTimes share, so the two compare equal.
 */
import type { ProcessEntry } from "./provider.js";

const FILETIME_UNIX_EPOCH_US = 11_644_473_600_000_000n;

/** A FILETIME (100 ns since 1601) → µs since 1970, truncated to the µs CIM also keeps. */
export function microsFromFileTime(v: unknown): number | undefined {
  if (typeof v !== "number" && typeof v !== "string") return undefined;
  if (!/^\d+$/.test(String(v))) return undefined;
  const us = BigInt(String(v)) / 10n - FILETIME_UNIX_EPOCH_US;
  return us > 0n ? Number(us) : undefined;
}

/**
 * CreationDate as ConvertTo-Json writes it: "/Date(ms)/" (5.1: milliseconds only), an ISO
 * string (7: up to 7 fraction digits), or an object whose `value` is one of those. → µs.
 */
export function parseCreationDate(v: unknown): number | undefined {
  if (typeof v === "object" && v !== null && "value" in v) return parseCreationDate((v as { value: unknown }).value);
  if (typeof v !== "string") return undefined;
  const legacy = /^\/Date\((-?\d+)(?:[+-]\d{4})?\)\/$/.exec(v);
  if (legacy) return Number(legacy[1]) * 1000;
  if (!/^\d{4}-\d{2}-\d{2}T/.test(v)) return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) return undefined;
  const frac = /\.(\d+)/.exec(v)?.[1] ?? "";
  // Date.parse keeps milliseconds; the next three digits are the microseconds.
  return ms * 1000 + Number(frac.slice(3, 6).padEnd(3, "0"));
}

/** ConvertTo-Json writes one object bare, none as an empty string: always a list here. */
export function jsonRows(text: string): Record<string, unknown>[] | undefined {
  const t = text.trim();
  if (t === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(t);
  } catch {
    return undefined;
  }
  if (parsed === null) return [];
  const rows = Array.isArray(parsed) ? parsed : [parsed];
  return rows.every((r) => typeof r === "object" && r !== null && !Array.isArray(r))
    ? (rows as Record<string, unknown>[])
    : undefined;
}

export interface WindowsProcessRow extends ProcessEntry {
  /**
   * Win32_Process.CommandLine; null when Windows withholds it (another user's or an elevated
   * process); undefined when the table has no command lines (the host's Toolhelp snapshot:
   * they come from the PEB then).
   */
  commandLine: string | null | undefined;
}

export interface WindowsProcessTable {
  rows: Map<number, WindowsProcessRow>;
  /** Pids Windows would not open for their creation time: present, but no identity can be proven. */
  hidden: Set<number>;
}

/**
 * The process table (Win32_Process as ConvertTo-Json writes it, or the host's Toolhelp
 * snapshot), or undefined when any row is not in the expected form (a skipped row would read
 * as a gone pid). `CreationFileTime` wins over CreationDate; an explicit null one is hidden.
 */
export function parseCimProcesses(text: string): WindowsProcessTable | undefined {
  const rows = jsonRows(text);
  if (!rows || rows.length === 0) return undefined;
  const table = new Map<number, WindowsProcessRow>();
  const hidden = new Set<number>();
  for (const r of rows) {
    const pid = r.ProcessId;
    const ppid = r.ParentProcessId;
    if (typeof pid !== "number" || typeof ppid !== "number") return undefined;
    const startTime = microsFromFileTime(r.CreationFileTime) ?? parseCreationDate(r.CreationDate);
    // The System Idle Process and System have no CreationDate; they are never a pane's ancestor.
    if (startTime === undefined) {
      if (pid === 0 || pid === 4) continue;
      if ("CreationFileTime" in r && r.CreationFileTime === null) {
        hidden.add(pid);
        continue;
      }
      return undefined;
    }
    const commandLine = typeof r.CommandLine === "string" ? r.CommandLine : "CommandLine" in r ? null : undefined;
    table.set(pid, { pid, ppid, pgid: -1, startTime, name: typeof r.Name === "string" ? r.Name : "", commandLine });
  }
  return { rows: table, hidden };
}

/** MSFT_NetTCPConnection.State, serialised as its number or its name. */
const TCP_STATES: Record<number, string> = {
  1: "Closed",
  2: "Listen",
  3: "SynSent",
  4: "SynReceived",
  5: "Established",
  6: "FinWait1",
  7: "FinWait2",
  8: "CloseWait",
  9: "Closing",
  10: "LastAck",
  11: "TimeWait",
  12: "DeleteTCB",
  100: "Bound",
};

export interface NetTcpRow {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  state: string;
  owningProcess: number;
}

export function parseNetTcpConnections(text: string): NetTcpRow[] | undefined {
  const rows = jsonRows(text);
  if (!rows) return undefined;
  const out: NetTcpRow[] = [];
  for (const r of rows) {
    const state = typeof r.State === "number" ? TCP_STATES[r.State] : r.State;
    const ok =
      typeof r.LocalAddress === "string" &&
      typeof r.LocalPort === "number" &&
      typeof r.RemoteAddress === "string" &&
      typeof r.RemotePort === "number" &&
      typeof r.OwningProcess === "number" &&
      typeof state === "string";
    if (!ok) return undefined;
    out.push({
      localAddress: r.LocalAddress as string,
      localPort: r.LocalPort as number,
      remoteAddress: r.RemoteAddress as string,
      remotePort: r.RemotePort as number,
      state: state as string,
      owningProcess: r.OwningProcess as number,
    });
  }
  return out;
}

/** What the host read from one process's PEB, through one handle (so one lifetime). */
export type ProcessDetail =
  | {
      ok: true;
      pid: number;
      startTime: number;
      cwd: string;
      commandLine: string | undefined;
      environment: Map<string, string>;
    }
  | { ok: false; pid: number; error: "access_denied" | "gone" | "wow64" | "read_failed"; detail: string };

const DETAIL_ERRORS = new Set(["access_denied", "gone", "wow64", "read_failed"]);

/** The host's `detail` record; undefined when it is not in the expected form. */
export function parseProcessDetail(text: string): ProcessDetail | undefined {
  const rows = jsonRows(text);
  if (rows?.length !== 1) return undefined;
  const r = rows[0]!;
  if (typeof r.ProcessId !== "number") return undefined;
  if (typeof r.Error === "string" && r.Error !== "") {
    if (!DETAIL_ERRORS.has(r.Error)) return undefined;
    return {
      ok: false,
      pid: r.ProcessId,
      error: r.Error as "access_denied",
      detail: typeof r.Message === "string" ? r.Message : r.Error,
    };
  }
  const startTime = microsFromFileTime(r.CreationFileTime);
  if (
    startTime === undefined ||
    typeof r.Cwd !== "string" ||
    !Array.isArray(r.Environment) ||
    !r.Environment.every((e) => typeof e === "string")
  )
    return undefined;
  const environment = new Map<string, string>();
  for (const pair of r.Environment as string[]) {
    // "=C:=C:\work" entries (per-drive cwds) start with '=': not variables.
    if (pair.startsWith("=")) continue;
    const eq = pair.indexOf("=");
    if (eq > 0) environment.set(pair.slice(0, eq).toUpperCase(), pair.slice(eq + 1));
  }
  return {
    ok: true,
    pid: r.ProcessId,
    startTime,
    commandLine: typeof r.CommandLine === "string" ? r.CommandLine : undefined,
    cwd: r.Cwd.replace(/\\$/, "").replace(/^([A-Za-z]:)$/, "$1\\"),
    environment,
  };
}

/**
 * A command line split the way CommandLineToArgvW (and the MSVC runtime) split it: spaces
 * separate, quotes group, 2n backslashes before a quote are n and the quote toggles, 2n+1
 * are n and a literal quote. argv[0] takes everything up to the next quote or space.
 */
export function splitWindowsCommandLine(line: string): string[] {
  const args: string[] = [];
  let i = 0;
  // argv[0]: quoted or not, with no escape processing.
  if (line[0] === '"') {
    const end = line.indexOf('"', 1);
    args.push(line.slice(1, end < 0 ? undefined : end));
    i = end < 0 ? line.length : end + 1;
  } else {
    const m = /^[^ \t]*/.exec(line)![0];
    args.push(m);
    i = m.length;
  }
  while (i < line.length) {
    while (line[i] === " " || line[i] === "\t") i++;
    if (i >= line.length) break;
    let arg = "";
    let quoted = false;
    for (; i < line.length; i++) {
      const c = line[i]!;
      if (c === "\\") {
        let n = 0;
        while (line[i] === "\\") n++, i++;
        if (line[i] === '"') {
          arg += "\\".repeat(Math.floor(n / 2));
          if (n % 2 === 1) arg += '"';
          else quoted = !quoted;
        } else {
          arg += "\\".repeat(n);
          i--;
        }
      } else if (c === '"') {
        // Inside quotes, "" is a literal quote (the MSVC 2008+ rule).
        if (quoted && line[i + 1] === '"') (arg += '"'), i++;
        else quoted = !quoted;
      } else if ((c === " " || c === "\t") && !quoted) break;
      else arg += c;
    }
    args.push(arg);
  }
  return args;
}
