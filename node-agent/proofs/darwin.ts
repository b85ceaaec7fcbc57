/**
 * The macOS proof provider: parses `ps` and `lsof -F` output (macOS has no /proc). Each call
 * forks, so it is slower than Linux; the parsers are pure and tested on recorded output.
 * ps `lstart` has one-second resolution, so a pid reused within the same second is not
 * caught by start time alone (the pane proof's other checks still apply).
 */
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import { runCommand, type CommandRunner } from "./run-command.js";
import {
  ancestryFromTable,
  fact,
  homeFromEnvironment,
  isLoopbackAddress,
  sameAddress,
  type Ancestry,
  type ConnectionPeer,
  type Fact,
  type ForegroundGroup,
  type HomeFact,
  type HomeHarness,
  type Listener,
  type ListenerSet,
  type ProcessEntry,
  type ProcessIdentity,
  type ProofProvider,
  type TcpTuple, type UnixConnectionPeer,
  type UnknownReason,
} from "./provider.js";

export interface PsRow extends ProcessEntry {
  pgid: number;
  tpgid: number;
  uid: number;
  /** "ttys003", or "??" for none. */
  tty: string;
  stat: string;
}

export const PS_ARGS = ["-axww", "-o", "pid=,ppid=,pgid=,tpgid=,uid=,tty=,stat=,lstart=,comm="] as const;

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
    table.set(pid, { pid, ppid, pgid, tpgid, uid, tty: t[5]!, stat: t[6]!, startTime, name: name.split("/").pop() ?? name });
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
      else if (field === "n") current.name = value;
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
      if (ep) out.push({ transport: "tcp", address: ep.address, port: ep.port, isLoopback: isLoopbackAddress(ep.address) });
    } else if (f.type === "unix" && f.name.startsWith("/") && !f.name.includes("->") && (f.tcpState === "" || f.tcpState === "LISTEN")) {
      // macOS prints a bound socket's path with no state; Linux lsof adds " type=STREAM" and ST=LISTEN.
      out.push({ transport: "unix", path: f.name.replace(/ type=\w+$/, "") });
    }
  }
  return out;
}

type Failure = { reason: UnknownReason; detail: string };
const isFailure = (x: unknown): x is Failure => typeof x === "object" && x !== null && "reason" in x && "detail" in x && !("pid" in x);

export class DarwinProofProvider implements ProofProvider {
  readonly platform = "darwin";

  constructor(
    private readonly clock: MonotonicClock = systemMonotonicClock,
    private readonly run: CommandRunner = runCommand,
    private readonly ownUid: number = process.getuid?.() ?? -1,
    /** This agent's pid: its end of a connection must be held by it. */
    private readonly agentPid: number = process.pid,
  ) {}

  private fail<T>(f: Failure): Fact<T> {
    return fact.unknown<T>(f.reason, f.detail, this.clock.nowMs());
  }

  private done<T>(value: T): Fact<T> {
    return fact.known(value, this.clock.nowMs());
  }

  private async table(): Promise<Map<number, PsRow> | Failure> {
    const r = await this.run("ps", PS_ARGS);
    if (r.isMissing) return { reason: "unsupported", detail: "ps is not installed" };
    const table = r.code === 0 ? parsePsTable(r.stdout) : undefined;
    return table ?? { reason: "unsupported", detail: `ps output was not in the expected form (exit ${r.code})` };
  }

  private async row(p: ProcessIdentity): Promise<PsRow | Failure> {
    const table = await this.table();
    if (isFailure(table)) return table;
    const row = table.get(p.pid);
    if (!row) return { reason: "pid_gone", detail: `pid ${p.pid}: the process no longer exists` };
    if (row.startTime !== p.startTime) return { reason: "pid_gone", detail: `pid ${p.pid} now belongs to another process (start ${row.startTime}, recorded ${p.startTime})` };
    return row;
  }

  private canSee(row: PsRow): Failure | undefined {
    // lsof shows another user's files only to root; an empty answer would be a lie.
    return this.ownUid === 0 || row.uid === this.ownUid ? undefined : { reason: "permission", detail: `pid ${row.pid} belongs to uid ${row.uid}; this agent runs as uid ${this.ownUid}` };
  }

  async identify(pid: number): Promise<Fact<ProcessEntry>> {
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const row = table.get(pid);
    if (!row) return this.fail({ reason: "pid_gone", detail: `pid ${pid}: the process no longer exists` });
    return this.done({ pid: row.pid, startTime: row.startTime, ppid: row.ppid, pgid: row.pgid, name: row.name });
  }

  async ancestry(p: ProcessIdentity): Promise<Fact<Ancestry>> {
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const row = table.get(p.pid);
    if (!row || row.startTime !== p.startTime) return this.fail({ reason: "pid_gone", detail: `pid ${p.pid}: the recorded process no longer runs` });
    return this.done(ancestryFromTable(table, row));
  }

  async foregroundGroup(p: ProcessIdentity): Promise<Fact<ForegroundGroup>> {
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const row = table.get(p.pid);
    if (!row || row.startTime !== p.startTime) return this.fail({ reason: "pid_gone", detail: `pid ${p.pid}: the recorded process no longer runs` });
    if (row.tty === "??" || row.tpgid <= 0) return this.done({ tty: "", foregroundPgid: -1 });
    return this.done({ tty: `/dev/${row.tty}`, foregroundPgid: row.tpgid });
  }

  async home(p: ProcessIdentity, harness: HomeHarness): Promise<Fact<HomeFact>> {
    const before = await this.row(p);
    if (isFailure(before)) return this.fail(before);
    const r = await this.run("ps", ["-E", "-ww", "-o", "command=", "-p", String(p.pid)]);
    const after = await this.row(p);
    if (isFailure(after)) return this.fail(after);
    if (r.code !== 0) return this.fail({ reason: "race", detail: `ps -E exited ${r.code}` });
    const env = parsePsEnvironment(r.stdout.trim());
    // macOS hides other users' (and hardened) environments: no HOME means not shown, not "no home".
    if (!env.has("HOME")) return this.fail({ reason: "permission", detail: `pid ${p.pid}: its environment is not visible to this agent` });
    const home = homeFromEnvironment(env, harness, "darwin");
    return home ? this.done(home) : this.fail({ reason: "unsupported", detail: `pid ${p.pid} has no HOME` });
  }

  async listeners(p: ProcessIdentity): Promise<Fact<ListenerSet>> {
    const before = await this.row(p);
    if (isFailure(before)) return this.fail(before);
    const hidden = this.canSee(before);
    if (hidden) return this.fail(hidden);
    const r = await this.run("lsof", ["-nP", "-w", "-p", String(p.pid), "-F", "ftnT"]);
    if (r.isMissing) return this.fail({ reason: "unsupported", detail: "lsof is not installed" });
    const after = await this.row(p);
    if (isFailure(after)) return this.fail(after);
    // lsof exits 1 when it selected nothing; that is an empty list, if the output is empty too.
    const files = r.code === 0 || (r.code === 1 && r.stdout.trim() === "") ? parseLsof(r.stdout) : undefined;
    if (!files) return this.fail({ reason: "unsupported", detail: `lsof output was not in the expected form (exit ${r.code})` });
    return this.done({ listeners: listenersFromLsof(files), covers: ["tcp", "unix"] });
  }

  async connectionPeer(tuple: TcpTuple): Promise<Fact<ConnectionPeer>> {
    const r = await this.run("lsof", ["-nP", "-w", `-iTCP:${tuple.localPort}`, "-sTCP:ESTABLISHED", "-F", "ftn"]);
    if (r.isMissing) return this.fail({ reason: "unsupported", detail: "lsof is not installed" });
    const files = r.code === 0 || (r.code === 1 && r.stdout.trim() === "") ? parseLsof(r.stdout) : undefined;
    if (!files) return this.fail({ reason: "unsupported", detail: `lsof output was not in the expected form (exit ${r.code})` });
    const ends = files.map((f) => {
      const [l, rem] = f.name.split("->");
      return { pid: f.pid, local: parseLsofEndpoint(l ?? ""), remote: parseLsofEndpoint(rem ?? "") };
    });
    const is = (e: { address: string; port: number } | undefined, address: string, port: number) => e !== undefined && e.port === port && sameAddress(e.address, address);
    const isAgentEnd = ends.some((e) => e.pid === this.agentPid && is(e.local, tuple.localAddress, tuple.localPort) && is(e.remote, tuple.remoteAddress, tuple.remotePort));
    const peerPids = new Set(ends.filter((e) => is(e.local, tuple.remoteAddress, tuple.remotePort) && is(e.remote, tuple.localAddress, tuple.localPort)).map((e) => e.pid));
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const peers = [...peerPids].flatMap((pid) => {
      const row = table.get(pid);
      return row ? [{ pid, startTime: row.startTime }] : [];
    });
    return this.done({ tuple, isAgentEnd, peers, isComplete: this.ownUid === 0 });
  }

  async unixConnectionPeer(): Promise<Fact<UnixConnectionPeer>> {
    return this.fail({ reason: "unsupported", detail: "a unix-socket connection's peer: lsof -U shows no peer socket on macOS; not implemented" });
  }

  async unixConnections(): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>> {
    return this.fail({ reason: "unsupported", detail: "a process's unix-socket connections: lsof -U shows no peer socket on macOS; not implemented" });
  }
}
