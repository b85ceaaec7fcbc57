/**
 * The macOS provider's parsers, pure and tested on recorded output: the `ps -o` table and its
 * `lstart` times, `ps -E`'s environment, and `lsof -F` records (with lsof's `\xNN` escapes of
 * non-ASCII paths put back). No command is run here; darwin.ts and darwin-snapshots.ts run them.
 */
import { isLoopbackAddress, type Listener, type ProcessEntry } from "./provider.js";

export interface PsRow extends ProcessEntry {
  pgid: number;
  tpgid: number;
  uid: number;
  /** "ttys003", or "??" for none. */
  tty: string;
  stat: string;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "Mon Nov 30 10:02:36 2026" (printed in UTC) → epoch seconds. */
export function parseLstart(tokens: string[]): number | undefined {
  const [, mon, day, time, year] = tokens;
  const m = MONTHS.indexOf(mon ?? "");
  const hms = /^(\d{1,2}):(\d{2}):(\d{2})$/.exec(time ?? "");
  if (m < 0 || !hms || !/^\d{1,2}$/.test(day ?? "") || !/^\d{4}$/.test(year ?? "")) return undefined;
  return Date.UTC(Number(year), m, Number(day), Number(hms[1]), Number(hms[2]), Number(hms[3])) / 1000;
}

/** The whole `ps` table, or undefined if any line is not in the expected form: a skipped row would read as a gone pid. */
export function parsePsTable(text: string): Map<number, PsRow> | undefined {
  const table = new Map<number, PsRow>();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const t = line.trim().split(/\s+/);
    if (t.length < 13) return undefined;
    const [pid, ppid, pgid, tpgid, uid] = t.slice(0, 5).map(Number) as [number, number, number, number, number];
    const startTime = parseLstart(t.slice(7, 12));
    if (![pid, ppid, pgid, tpgid, uid].every(Number.isInteger) || startTime === undefined) return undefined;
    const name = t.slice(12).join(" ");
    table.set(pid, {
      pid,
      ppid,
      pgid,
      tpgid,
      uid,
      tty: t[5]!,
      stat: t[6]!,
      startTime,
      name: name.split("/").pop() ?? name,
    });
  }
  return table.size > 0 ? table : undefined;
}

/** `ps -E -ww -o command= -p PID` appends the environment to the command; later KEY= wins, as the env follows argv. */
export function parsePsEnvironment(line: string): Map<string, string> {
  const env = new Map<string, string>();
  const keys = [...line.matchAll(/(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=/g)];
  keys.forEach((m, i) => {
    const valueStart = m.index! + m[0].length;
    const valueEnd = i + 1 < keys.length ? keys[i + 1]!.index! : line.length;
    env.set(m[1]!, line.slice(valueStart, valueEnd).trim());
  });
  return env;
}

export interface LsofFile {
  pid: number;
  fd: string;
  type: string;
  name: string;
  tcpState: string;
}

/**
 * lsof prints a byte it cannot show in the C locale as `\xNN` (so a UTF-8 path arrives as
 * escapes); the bytes are put back and read as UTF-8. A path that does not decode stays as printed.
 */
export function decodeLsofName(text: string): string {
  if (!text.includes("\\x")) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; ) {
    const m = /^\\x([0-9a-fA-F]{2})/.exec(text.slice(i, i + 4));
    if (m) {
      bytes.push(parseInt(m[1]!, 16));
      i += 4;
    } else {
      bytes.push(...Buffer.from(text[i]!, "utf8"));
      i += 1;
    }
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return text;
  }
}

/** `lsof -F` records: a `p` line opens a process, an `f` line a file; t/n/T fill it in. */
export function parseLsof(text: string): LsofFile[] | undefined {
  const files: LsofFile[] = [];
  let pid: number | undefined;
  let current: LsofFile | undefined;
  const lines = text.split("\n").filter(Boolean);
  // -F output always opens with a process set; anything else (a plain table, an error) is not it.
  if (lines.length && !lines[0]!.startsWith("p")) return undefined;
  for (const line of lines) {
    const field = line[0];
    const value = line.slice(1);
    if (field === "p") {
      pid = Number(value);
      if (!Number.isInteger(pid)) return undefined;
      current = undefined;
    } else if (field === "f") {
      if (pid === undefined) return undefined;
      current = { pid, fd: value, type: "", name: "", tcpState: "" };
      files.push(current);
    } else if (field === "t" || field === "n" || field === "T") {
      if (!current) return undefined;
      if (field === "t") current.type = value;
      else if (field === "n") current.name = decodeLsofName(value);
      else if (value.startsWith("ST=")) current.tcpState = value.slice(3);
    } else if (!/^[A-Za-z0-9]$/.test(field ?? "")) {
      // Any other lsof field letter is ignored; a line without one is not lsof -F output.
      return undefined;
    }
  }
  return files;
}

/** "127.0.0.1:8080", "[::1]:8080", "*:8080" → address and port. */
export function parseLsofEndpoint(text: string): { address: string; port: number } | undefined {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(text);
  return m ? { address: m[1] === "*" ? "0.0.0.0" : m[1]!, port: Number(m[2]) } : undefined;
}

export function listenersFromLsof(files: LsofFile[]): Listener[] {
  const out: Listener[] = [];
  for (const f of files) {
    if ((f.type === "IPv4" || f.type === "IPv6") && f.tcpState === "LISTEN") {
      const ep = parseLsofEndpoint(f.name);
      if (ep)
        out.push({ transport: "tcp", address: ep.address, port: ep.port, isLoopback: isLoopbackAddress(ep.address) });
    } else if (
      f.type === "unix" &&
      f.name.startsWith("/") &&
      !f.name.includes("->") &&
      (f.tcpState === "" || f.tcpState === "LISTEN")
    ) {
      // macOS prints a bound socket's path with no state; Linux lsof adds " type=STREAM" and ST=LISTEN.
      out.push({ transport: "unix", path: f.name.replace(/ type=\w+$/, "") });
    }
  }
  return out;
}
