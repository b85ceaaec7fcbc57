/**
 * The Windows proof provider: parses PowerShell's `Get-CimInstance Win32_Process` and
 * `Get-NetTCPConnection` output as JSON. Windows has no controlling-terminal process
 * groups, and Win32_Process exposes no environment, so `foregroundGroup` and `home` answer
 * `unsupported` (the pane proof then refuses private-home steering, as ADR 0207 requires
 * until a home can be proven). Each call starts PowerShell, which costs hundreds of ms.
 */
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import { runCommand, type CommandRunner } from "./run-command.js";
import {
  ancestryFromTable,
  fact,
  isLoopbackAddress,
  sameAddress,
  type Ancestry,
  type ConnectionPeer,
  type Fact,
  type ForegroundGroup,
  type HomeFact,
  type HomeHarness,
  type ListenerSet,
  type ProcessEntry,
  type ProcessIdentity,
  type ProofProvider,
  type TcpTuple, type UnixConnectionPeer,
  type UnknownReason,
} from "./provider.js";

const POWERSHELL = "powershell.exe";
const PS_PREFIX = ["-NoProfile", "-NonInteractive", "-Command"] as const;

export const PROCESSES_SCRIPT = "Get-CimInstance Win32_Process | Select-Object ProcessId,ParentProcessId,CreationDate,Name | ConvertTo-Json -Compress";

const TCP_FIELDS = "Select-Object LocalAddress,LocalPort,RemoteAddress,RemotePort,State,OwningProcess | ConvertTo-Json -Compress";

export function listenersScript(pid: number): string {
  return `Get-NetTCPConnection -State Listen -OwningProcess ${Math.trunc(pid)} -ErrorAction SilentlyContinue | ${TCP_FIELDS}`;
}

export function connectionScript(portA: number, portB: number): string {
  const a = Math.trunc(portA);
  const b = Math.trunc(portB);
  return `Get-NetTCPConnection -State Established -ErrorAction SilentlyContinue | Where-Object { ($_.LocalPort -eq ${a} -and $_.RemotePort -eq ${b}) -or ($_.LocalPort -eq ${b} -and $_.RemotePort -eq ${a}) } | ${TCP_FIELDS}`;
}

/**
 * CreationDate as ConvertTo-Json writes it: "/Date(ms)/" (Windows PowerShell 5.1), an ISO
 * string (PowerShell 7), or an object whose `value` is one of those. → epoch milliseconds.
 */
export function parseCreationDate(v: unknown): number | undefined {
  if (typeof v === "object" && v !== null && "value" in v) return parseCreationDate((v as { value: unknown }).value);
  if (typeof v !== "string") return undefined;
  const legacy = /^\/Date\((-?\d+)(?:[+-]\d{4})?\)\/$/.exec(v);
  if (legacy) return Number(legacy[1]);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(v)) return undefined;
  // Date.parse keeps milliseconds only; the 100 ns digits are kept as a fraction so equal stays equal.
  const ms = Date.parse(v);
  const frac = /\.(\d{4,7})/.exec(v);
  const extra = frac ? Number(`0.${frac[1]!.slice(3).padEnd(4, "0")}`) : 0;
  return Number.isNaN(ms) ? undefined : ms + extra;
}

/** ConvertTo-Json writes one object bare, none as an empty string: always a list here. */
function jsonRows(text: string): Record<string, unknown>[] | undefined {
  const t = text.trim();
  if (t === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(t);
  } catch {
    return undefined;
  }
  const rows = Array.isArray(parsed) ? parsed : [parsed];
  return rows.every((r) => typeof r === "object" && r !== null) ? (rows as Record<string, unknown>[]) : undefined;
}

export function parseCimProcesses(text: string): Map<number, ProcessEntry> | undefined {
  const rows = jsonRows(text);
  if (!rows || rows.length === 0) return undefined;
  const table = new Map<number, ProcessEntry>();
  for (const r of rows) {
    const pid = r.ProcessId;
    const ppid = r.ParentProcessId;
    const startTime = parseCreationDate(r.CreationDate);
    // The System Idle Process and System have no CreationDate; they are never a pane's ancestor.
    if (typeof pid !== "number" || typeof ppid !== "number") return undefined;
    if (startTime === undefined) {
      if (pid === 0 || pid === 4) continue;
      return undefined;
    }
    table.set(pid, { pid, ppid, pgid: -1, startTime, name: typeof r.Name === "string" ? r.Name : "" });
  }
  return table;
}

/** MSFT_NetTCPConnection.State, serialised as its number or its name. */
const TCP_STATES: Record<number, string> = { 1: "Closed", 2: "Listen", 3: "SynSent", 4: "SynReceived", 5: "Established", 6: "FinWait1", 7: "FinWait2", 8: "CloseWait", 9: "Closing", 10: "LastAck", 11: "TimeWait", 12: "DeleteTCB", 100: "Bound" };

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

type Failure = { reason: UnknownReason; detail: string };
const isFailure = (x: unknown): x is Failure => typeof x === "object" && x !== null && "reason" in x && "detail" in x;

export class WindowsProofProvider implements ProofProvider {
  readonly platform = "win32";

  constructor(
    private readonly clock: MonotonicClock = systemMonotonicClock,
    private readonly run: CommandRunner = runCommand,
    /** This agent's pid: its end of a connection must be held by it. */
    private readonly agentPid: number = process.pid,
  ) {}

  private fail<T>(f: Failure): Fact<T> {
    return fact.unknown<T>(f.reason, f.detail, this.clock.nowMs());
  }

  private done<T>(value: T): Fact<T> {
    return fact.known(value, this.clock.nowMs());
  }

  private async powershell(script: string): Promise<string | Failure> {
    const r = await this.run(POWERSHELL, [...PS_PREFIX, script]);
    if (r.isMissing) return { reason: "unsupported", detail: "powershell.exe is not available" };
    if (r.code !== 0) return { reason: "race", detail: `PowerShell exited ${r.code}: ${r.stderr.trim().slice(0, 200)}` };
    return r.stdout;
  }

  private async table(): Promise<Map<number, ProcessEntry> | Failure> {
    const out = await this.powershell(PROCESSES_SCRIPT);
    if (isFailure(out)) return out;
    return parseCimProcesses(out) ?? { reason: "unsupported", detail: "Win32_Process output was not in the expected form" };
  }

  private async entry(p: ProcessIdentity): Promise<{ table: Map<number, ProcessEntry>; row: ProcessEntry } | Failure> {
    const table = await this.table();
    if (isFailure(table)) return table;
    const row = table.get(p.pid);
    if (!row) return { reason: "pid_gone", detail: `pid ${p.pid}: the process no longer exists` };
    if (row.startTime !== p.startTime) return { reason: "pid_gone", detail: `pid ${p.pid} now belongs to another process (created ${row.startTime}, recorded ${p.startTime})` };
    return { table, row };
  }

  async identify(pid: number): Promise<Fact<ProcessEntry>> {
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const row = table.get(pid);
    return row ? this.done(row) : this.fail({ reason: "pid_gone", detail: `pid ${pid}: the process no longer exists` });
  }

  async ancestry(p: ProcessIdentity): Promise<Fact<Ancestry>> {
    const e = await this.entry(p);
    return isFailure(e) ? this.fail(e) : this.done(ancestryFromTable(e.table, e.row));
  }

  async foregroundGroup(_p: ProcessIdentity): Promise<Fact<ForegroundGroup>> {
    return this.fail({ reason: "unsupported", detail: "Windows consoles have no foreground process group; the pane host's foreground list stands in" });
  }

  async home(_p: ProcessIdentity, _harness: HomeHarness): Promise<Fact<HomeFact>> {
    return this.fail({ reason: "unsupported", detail: "Win32_Process does not expose a process's environment, so its CODEX_HOME cannot be proven" });
  }

  async listeners(p: ProcessIdentity): Promise<Fact<ListenerSet>> {
    const before = await this.entry(p);
    if (isFailure(before)) return this.fail(before);
    const out = await this.powershell(listenersScript(p.pid));
    if (isFailure(out)) return this.fail(out);
    const rows = parseNetTcpConnections(out);
    if (!rows) return this.fail({ reason: "unsupported", detail: "Get-NetTCPConnection output was not in the expected form" });
    const after = await this.entry(p);
    if (isFailure(after)) return this.fail(after);
    const listeners = rows
      .filter((r) => r.state === "Listen" && r.owningProcess === p.pid)
      .map((r) => ({ transport: "tcp" as const, address: r.localAddress, port: r.localPort, isLoopback: isLoopbackAddress(r.localAddress) }));
    // Get-NetTCPConnection shows no AF_UNIX sockets: "unix" is left out of covers, not reported as none.
    return this.done({ listeners, covers: ["tcp"] });
  }

  async connectionPeer(tuple: TcpTuple): Promise<Fact<ConnectionPeer>> {
    const out = await this.powershell(connectionScript(tuple.localPort, tuple.remotePort));
    if (isFailure(out)) return this.fail(out);
    const rows = parseNetTcpConnections(out);
    if (!rows) return this.fail({ reason: "unsupported", detail: "Get-NetTCPConnection output was not in the expected form" });
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const established = rows.filter((r) => r.state === "Established");
    const isAgentEnd = established.some(
      (r) => r.owningProcess === this.agentPid && sameAddress(r.localAddress, tuple.localAddress) && r.localPort === tuple.localPort && sameAddress(r.remoteAddress, tuple.remoteAddress) && r.remotePort === tuple.remotePort,
    );
    const peerPids = new Set(
      established
        .filter((r) => sameAddress(r.localAddress, tuple.remoteAddress) && r.localPort === tuple.remotePort && sameAddress(r.remoteAddress, tuple.localAddress) && r.remotePort === tuple.localPort)
        .map((r) => r.owningProcess),
    );
    const peers = [...peerPids].flatMap((pid) => {
      const row = table.get(pid);
      return row ? [{ pid, startTime: row.startTime }] : [];
    });
    return this.done({ tuple, isAgentEnd, peers, isComplete: true });
  }

  async unixConnectionPeer(): Promise<Fact<UnixConnectionPeer>> {
    return this.fail({ reason: "unsupported", detail: "a unix-socket connection's peer: Windows shows no AF_UNIX sockets to PowerShell; not implemented" });
  }

  async unixConnections(): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>> {
    return this.fail({ reason: "unsupported", detail: "a process's unix-socket connections: Windows shows no AF_UNIX sockets to PowerShell; not implemented" });
  }
}
