/**
 * The Windows proof provider. Every fact comes from one long-lived PowerShell host
 * (windows-host.ts) through the `WindowsChannel` seam, so the same code runs on recorded
 * answers in tests and on the real host on a PC, and no proof starts a process. Facts:
 * the Win32_Process table (ancestry by creation time, so a reused pid is caught), command
 * lines, Get-NetTCPConnection (the exact tuple and its owning process), and cwd + environment
 * from the process's PEB, read through one handle whose creation time names the lifetime.
 * Windows consoles have no process groups: `foregroundGroup` and `groupMembers` answer
 * `unsupported`, and the pane host's own foreground list stands in (pane-proof.ts).
 */
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import type { HostAnswer, WindowsChannel, WindowsQuery } from "./windows-host.js";
import {
  parseCimProcesses,
  parseNetTcpConnections,
  parseProcessDetail,
  splitWindowsCommandLine,
  type NetTcpRow,
  type WindowsProcessRow,
  type WindowsProcessTable,
} from "./windows-parse.js";
import {
  ancestryFromTable,
  fact,
  homeFromEnvironment,
  isLoopbackAddress,
  sameAddress,
  type Ancestry,
  type CommandLine,
  type ConnectionPeer,
  type Fact,
  type ForegroundGroup,
  type HomeFact,
  type HomeHarness,
  type ListenerSet,
  type ProcessEntry,
  type ProcessIdentity,
  type ProofProvider,
  type TcpTuple,
  type UnixConnectionPeer,
  type UnknownReason,
} from "./provider.js";

type Failure = { reason: UnknownReason; detail: string };
const isFailure = (x: unknown): x is Failure =>
  typeof x === "object" && x !== null && "reason" in x && "detail" in x && !(x instanceof Map);

export class WindowsProofProvider implements ProofProvider {
  readonly platform = "win32";

  constructor(
    private readonly ask: WindowsChannel,
    private readonly clock: MonotonicClock = systemMonotonicClock,
    /** This agent's pid: its end of a connection must be held by it. */
    private readonly agentPid: number = process.pid,
    private readonly release: () => void = () => {},
  ) {}

  close(): void {
    this.release();
  }

  private fail<T>(f: Failure): Fact<T> {
    return fact.unknown<T>(f.reason, f.detail, this.clock.nowMs());
  }

  private done<T>(value: T): Fact<T> {
    return fact.known(value, this.clock.nowMs());
  }

  private async query(q: WindowsQuery): Promise<string | Failure> {
    const a: HostAnswer = await this.ask(q);
    return a.ok ? a.data : { reason: a.reason, detail: a.detail };
  }

  private pendingTable: Promise<WindowsProcessTable | Failure> | undefined;

  /** One table read for every caller that asks while it runs; never a finished one. */
  private table(): Promise<WindowsProcessTable | Failure> {
    if (!this.pendingTable) {
      this.pendingTable = this.query({ op: "processes" })
        .then((out) =>
          isFailure(out)
            ? out
            : (parseCimProcesses(out) ?? {
                reason: "unsupported" as const,
                detail: "Win32_Process output was not in the expected form",
              }),
        )
        .finally(() => (this.pendingTable = undefined));
    }
    return this.pendingTable;
  }

  private static missing(table: WindowsProcessTable, pid: number): Failure {
    // A process Windows will not open for its creation time exists, but its lifetime cannot be told.
    if (table.hidden.has(pid))
      return { reason: "permission", detail: `pid ${pid}: Windows does not let this agent read its creation time` };
    return { reason: "pid_gone", detail: `pid ${pid}: the process no longer exists` };
  }

  private async entry(
    p: ProcessIdentity,
  ): Promise<{ table: Map<number, WindowsProcessRow>; row: WindowsProcessRow } | Failure> {
    const t = await this.table();
    if (isFailure(t)) return t;
    const table = t.rows;
    const row = table.get(p.pid);
    if (!row) return WindowsProofProvider.missing(t, p.pid);
    if (row.startTime !== p.startTime)
      return {
        reason: "pid_gone",
        detail: `pid ${p.pid} now belongs to another process (created ${row.startTime}, recorded ${p.startTime})`,
      };
    return { table, row };
  }

  async identify(pid: number): Promise<Fact<ProcessEntry>> {
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    const row = table.rows.get(pid);
    if (!row) return this.fail(WindowsProofProvider.missing(table, pid));
    const { commandLine: _c, ...entry } = row;
    return this.done(entry);
  }

  async commandLine(p: ProcessIdentity): Promise<Fact<CommandLine>> {
    const e = await this.entry(p);
    if (isFailure(e)) return this.fail(e);
    // Windows withholds another user's or an elevated process's command line (null): not an empty one.
    if (e.row.commandLine === null)
      return this.fail({
        reason: "permission",
        detail: `pid ${p.pid}: Windows does not show its command line to this agent`,
      });
    if (e.row.commandLine !== undefined)
      return this.done({ argv: splitWindowsCommandLine(e.row.commandLine), isExact: true });
    // The host's snapshot carries no command lines: the PEB has it, read through a handle of this lifetime.
    const d = await this.detail(p);
    if (isFailure(d)) return this.fail(d);
    if (d.commandLine === undefined)
      return this.fail({
        reason: "unsupported",
        detail: `pid ${p.pid}: the host's process detail has no command line`,
      });
    return this.done({ argv: splitWindowsCommandLine(d.commandLine), isExact: true });
  }

  /** cwd and environment of the recorded lifetime, from its PEB. */
  private async detail(
    p: ProcessIdentity,
  ): Promise<{ cwd: string; commandLine: string | undefined; environment: Map<string, string> } | Failure> {
    const out = await this.query({ op: "detail", pid: p.pid });
    if (isFailure(out)) return out;
    const d = parseProcessDetail(out);
    if (!d) return { reason: "unsupported", detail: "the host's process detail was not in the expected form" };
    if (!d.ok) {
      const reason: UnknownReason =
        d.error === "access_denied"
          ? "permission"
          : d.error === "gone"
            ? "pid_gone"
            : d.error === "wow64"
              ? "unsupported"
              : "race";
      return { reason, detail: `pid ${p.pid}: ${d.detail}` };
    }
    // The handle the PEB was read through names one lifetime: another creation time is a reused pid.
    if (d.pid !== p.pid || d.startTime !== p.startTime)
      return {
        reason: "pid_gone",
        detail: `pid ${p.pid} now belongs to another process (created ${d.startTime}, recorded ${p.startTime})`,
      };
    return d;
  }

  async cwd(p: ProcessIdentity): Promise<Fact<string>> {
    const d = await this.detail(p);
    return isFailure(d) ? this.fail(d) : this.done(d.cwd);
  }

  async environment(p: ProcessIdentity): Promise<Fact<ReadonlyMap<string, string>>> {
    const d = await this.detail(p);
    return isFailure(d) ? this.fail(d) : this.done(d.environment);
  }

  async home(p: ProcessIdentity, harness: HomeHarness): Promise<Fact<HomeFact>> {
    const d = await this.detail(p);
    if (isFailure(d)) return this.fail(d);
    const home = homeFromEnvironment(d.environment, harness, "win32");
    return home
      ? this.done(home)
      : this.fail({ reason: "unsupported", detail: `pid ${p.pid} has neither HOME nor USERPROFILE` });
  }

  async ancestry(p: ProcessIdentity): Promise<Fact<Ancestry>> {
    const e = await this.entry(p);
    return isFailure(e) ? this.fail(e) : this.done(ancestryFromTable(e.table, e.row));
  }

  async foregroundGroup(_p: ProcessIdentity): Promise<Fact<ForegroundGroup>> {
    return this.fail({
      reason: "unsupported",
      detail: "Windows consoles have no foreground process group; the pane host's foreground list stands in",
    });
  }

  async processes(): Promise<Fact<ProcessEntry[]>> {
    const table = await this.table();
    if (isFailure(table)) return this.fail(table);
    return this.done(
      [...table.rows.values()].map(({ commandLine: _c, ...entry }) => entry).sort((a, b) => a.pid - b.pid),
    );
  }

  async groupMembers(_pgid: number): Promise<Fact<ProcessEntry[]>> {
    return this.fail({
      reason: "unsupported",
      detail: "Windows has no process groups; the pane host (Herdr) lists the pane's foreground processes",
    });
  }

  private async tcp(q: Extract<WindowsQuery, { op: "tcp" }>): Promise<NetTcpRow[] | Failure> {
    const out = await this.query(q);
    if (isFailure(out)) return out;
    return (
      parseNetTcpConnections(out) ?? {
        reason: "unsupported",
        detail: "Get-NetTCPConnection output was not in the expected form",
      }
    );
  }

  async listeners(p: ProcessIdentity): Promise<Fact<ListenerSet>> {
    const before = await this.entry(p);
    if (isFailure(before)) return this.fail(before);
    const rows = await this.tcp({ op: "tcp", state: "Listen", pid: p.pid });
    if (isFailure(rows)) return this.fail(rows);
    const after = await this.entry(p);
    if (isFailure(after)) return this.fail(after);
    const listeners = rows
      .filter((r) => r.state === "Listen" && r.owningProcess === p.pid)
      .map((r) => ({
        transport: "tcp" as const,
        address: r.localAddress,
        port: r.localPort,
        isLoopback: isLoopbackAddress(r.localAddress),
      }));
    // Get-NetTCPConnection shows no AF_UNIX sockets: "unix" is left out of covers, not reported as none.
    return this.done({ listeners, covers: ["tcp"] });
  }

  async connectionPeer(tuple: TcpTuple): Promise<Fact<ConnectionPeer>> {
    const [rows, table] = await Promise.all([
      this.tcp({ op: "tcp", state: "Established", ports: [tuple.localPort, tuple.remotePort] }),
      this.table(),
    ]);
    if (isFailure(rows)) return this.fail(rows);
    if (isFailure(table)) return this.fail(table);
    const established = rows.filter((r) => r.state === "Established");
    const isAgentEnd = established.some(
      (r) =>
        r.owningProcess === this.agentPid &&
        sameAddress(r.localAddress, tuple.localAddress) &&
        r.localPort === tuple.localPort &&
        sameAddress(r.remoteAddress, tuple.remoteAddress) &&
        r.remotePort === tuple.remotePort,
    );
    const peerPids = new Set(
      established
        .filter(
          (r) =>
            sameAddress(r.localAddress, tuple.remoteAddress) &&
            r.localPort === tuple.remotePort &&
            sameAddress(r.remoteAddress, tuple.localAddress) &&
            r.remotePort === tuple.localPort,
        )
        .map((r) => r.owningProcess),
    );
    // A peer pid missing from the table exited between the two reads: not complete, never "no peer".
    const peers = [...peerPids].flatMap((pid) => {
      const row = table.rows.get(pid);
      return row ? [{ pid, startTime: row.startTime }] : [];
    });
    return this.done({ tuple, isAgentEnd, peers, isComplete: peers.length === peerPids.size });
  }

  async unixConnectionPeer(): Promise<Fact<UnixConnectionPeer>> {
    return this.fail({
      reason: "unsupported",
      detail: "a unix-socket connection's peer: Windows shows no AF_UNIX sockets to PowerShell; not implemented",
    });
  }

  async unixConnections(): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>> {
    return this.fail({
      reason: "unsupported",
      detail: "a process's unix-socket connections: Windows shows no AF_UNIX sockets to PowerShell; not implemented",
    });
  }
}
