/**
 * The macOS proof provider (macOS has no /proc): facts from `ps` and `lsof -F` run through the
 * injected command runner (run-command.ts), so the same code runs on recorded answers in tests
 * and on the real tools on a Mac. The process table and the socket table are shared snapshots
 * (darwin-snapshots.ts), each fact stamped when the read it stands on was started; a pid's
 * lifetime is checked on a table read after its sockets were, so a reused pid is caught.
 * ps `lstart` has one-second resolution, so a pid reused within the same second is not
 * caught by start time alone (the pane proof's other checks still apply).
 */
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import { runCommand, type CommandRunner } from "./run-command.js";
import {
  ancestryFromTable,
  fact,
  homeFromEnvironment,
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
} from "./provider.js";
import {
  listenersFromLsof,
  parseLsof,
  parseLsofEndpoint,
  parseLstart,
  parsePsEnvironment,
  type LsofFile,
  type PsRow,
} from "./darwin-parse.js";
import {
  isFailure,
  processTable,
  SnapshotSource,
  SNAPSHOT_REUSE_MS,
  socketTable,
  type Failure,
  type Snapshot,
} from "./darwin-snapshots.js";

export {
  decodeLsofName,
  listenersFromLsof,
  parseLsof,
  parseLsofEndpoint,
  parseLstart,
  parsePsEnvironment,
  parsePsTable,
  type LsofFile,
  type PsRow,
} from "./darwin-parse.js";

const entryOf = (r: PsRow): ProcessEntry => ({
  pid: r.pid,
  startTime: r.startTime,
  ppid: r.ppid,
  pgid: r.pgid,
  name: r.name,
});

export class DarwinProofProvider implements ProofProvider {
  readonly platform = "darwin";
  /** The shared `ps -ax` table and `lsof -iTCP -U` socket table (exposed for fork counts). */
  readonly processTable: SnapshotSource<Map<number, PsRow>>;
  readonly socketTable: SnapshotSource<LsofFile[]>;

  constructor(
    private readonly clock: MonotonicClock = systemMonotonicClock,
    private readonly run: CommandRunner = runCommand,
    private readonly ownUid: number = process.getuid?.() ?? -1,
    /** This agent's pid: its end of a connection must be held by it. */
    private readonly agentPid: number = process.pid,
    /** How long a snapshot may answer another fact; 0 forks for every fact (the bench's comparison). */
    reuseMs: number = SNAPSHOT_REUSE_MS,
  ) {
    this.processTable = new SnapshotSource(clock, processTable(run), reuseMs);
    this.socketTable = new SnapshotSource(clock, socketTable(run), reuseMs);
  }

  /** An unknown is stamped when it was found: it is refused, never aged into a pass. */
  private fail<T>(f: Failure): Fact<T> {
    return fact.unknown<T>(f.reason, f.detail, this.clock.nowMs());
  }

  /** A known fact carries the start of the oldest read it stands on. */
  private done<T>(value: T, startedAtMs: number): Fact<T> {
    return fact.known(value, startedAtMs);
  }

  /** The recorded lifetime's row in `snap`, or why it is not there. */
  private rowIn(snap: Snapshot<Map<number, PsRow>>, p: ProcessIdentity): PsRow | Failure {
    const row = snap.value.get(p.pid);
    if (!row) return { reason: "pid_gone", detail: `pid ${p.pid}: the process no longer exists` };
    if (row.startTime !== p.startTime)
      return {
        reason: "pid_gone",
        detail: `pid ${p.pid} now belongs to another process (start ${row.startTime}, recorded ${p.startTime})`,
      };
    return row;
  }

  /** `ps -o lstart=,FIELD= -p PID`: the start time and the field read by one ps, so both belong to one lifetime. */
  private async withStart(
    p: ProcessIdentity,
    field: "args" | "command",
    env: boolean,
  ): Promise<{ text: string; startedAtMs: number } | Failure> {
    const startedAtMs = this.clock.nowMs();
    const r = await this.run("ps", [...(env ? ["-E"] : []), "-ww", "-o", `lstart=,${field}=`, "-p", String(p.pid)], {
      utf8: true,
    });
    if (r.isMissing) return { reason: "unsupported", detail: "ps is not installed" };
    // ps -p exits 1 with no output and no complaint when no such process exists; a complaint is something else.
    if (r.code === 1 && r.stdout.trim() === "" && r.stderr.trim() === "")
      return { reason: "pid_gone", detail: `pid ${p.pid}: the process no longer exists` };
    const t = r.stdout.trim();
    const start = parseLstart(t.split(/\s+/).slice(0, 5));
    if (r.code !== 0 || start === undefined)
      return {
        reason: "race",
        detail: `ps ${env ? "-E " : ""}-o ${field} exited ${r.code}: ${r.stderr.trim().slice(0, 120)}`,
      };
    if (start !== p.startTime)
      return {
        reason: "pid_gone",
        detail: `pid ${p.pid} now belongs to another process (start ${start}, recorded ${p.startTime})`,
      };
    return { text: t.replace(/^\S+\s+\S+\s+\d+\s+\S+\s+\d+\s*/, ""), startedAtMs };
  }

  private canSee(row: PsRow): Failure | undefined {
    // lsof shows another user's files only to root; an empty answer would be a lie.
    return this.ownUid === 0 || row.uid === this.ownUid
      ? undefined
      : {
          reason: "permission",
          detail: `pid ${row.pid} belongs to uid ${row.uid}; this agent runs as uid ${this.ownUid}`,
        };
  }

  /**
   * The recorded lifetime, checked on a process table started after `read` had finished: a pid
   * reused before or during the read shows another start time then. With `needsSight`, another
   * user's process is permission (lsof shows only root every process's files).
   */
  private async checkedAfter(
    p: ProcessIdentity,
    readFinishedAtMs: number,
    needsSight: boolean,
  ): Promise<PsRow | Failure> {
    const table = await this.processTable.get(readFinishedAtMs);
    if (isFailure(table)) return table;
    const row = this.rowIn(table, p);
    if (isFailure(row)) return row;
    return (needsSight ? this.canSee(row) : undefined) ?? row;
  }

  /**
   * The table for a fact about `pid`. A reused table may predate a process, so a pid missing
   * from it, or showing another start time, is asked again of a table started by this call:
   * absence is only ever concluded from a read that began after the question.
   */
  private async tableFor(pid: number, startTime?: number): Promise<Snapshot<Map<number, PsRow>> | Failure> {
    const askedAtMs = this.clock.nowMs();
    const table = await this.processTable.get();
    if (isFailure(table) || table.startedAtMs > askedAtMs) return table;
    const row = table.value.get(pid);
    return row && (startTime === undefined || row.startTime === startTime) ? table : this.processTable.get(askedAtMs);
  }

  async identify(pid: number): Promise<Fact<ProcessEntry>> {
    const table = await this.tableFor(pid);
    if (isFailure(table)) return this.fail(table);
    const row = table.value.get(pid);
    if (!row) return this.fail({ reason: "pid_gone", detail: `pid ${pid}: the process no longer exists` });
    return this.done(entryOf(row), table.startedAtMs);
  }

  async ancestry(p: ProcessIdentity): Promise<Fact<Ancestry>> {
    const table = await this.tableFor(p.pid, p.startTime);
    if (isFailure(table)) return this.fail(table);
    const row = this.rowIn(table, p);
    if (isFailure(row))
      return this.fail({ reason: "pid_gone", detail: `pid ${p.pid}: the recorded process no longer runs` });
    return this.done(ancestryFromTable(table.value, row), table.startedAtMs);
  }

  async foregroundGroup(p: ProcessIdentity): Promise<Fact<ForegroundGroup>> {
    const table = await this.tableFor(p.pid, p.startTime);
    if (isFailure(table)) return this.fail(table);
    const row = this.rowIn(table, p);
    if (isFailure(row))
      return this.fail({ reason: "pid_gone", detail: `pid ${p.pid}: the recorded process no longer runs` });
    if (row.tty === "??" || row.tpgid <= 0) return this.done({ tty: "", foregroundPgid: -1 }, table.startedAtMs);
    return this.done({ tty: `/dev/${row.tty}`, foregroundPgid: row.tpgid }, table.startedAtMs);
  }

  async commandLine(p: ProcessIdentity): Promise<Fact<CommandLine>> {
    const r = await this.withStart(p, "args", false);
    if (isFailure(r)) return this.fail(r);
    // ps joins argv with spaces: split back, flagged inexact (an argument with a space splits).
    return r.text
      ? this.done({ argv: r.text.split(/\s+/), isExact: false }, r.startedAtMs)
      : this.fail({ reason: "permission", detail: `pid ${p.pid}: ps shows no command line` });
  }

  async cwd(p: ProcessIdentity): Promise<Fact<string>> {
    const startedAtMs = this.clock.nowMs();
    const r = await this.run("lsof", ["-a", "-nP", "-w", "-p", String(p.pid), "-d", "cwd", "-F", "fn"]);
    if (r.isMissing) return this.fail({ reason: "unsupported", detail: "lsof is not installed" });
    const checked = await this.checkedAfter(p, this.clock.nowMs(), true);
    if (isFailure(checked)) return this.fail(checked);
    const files = r.code === 0 || (r.code === 1 && r.stdout.trim() === "") ? parseLsof(r.stdout) : undefined;
    const dir = files?.find((f) => f.fd === "cwd" && f.pid === p.pid)?.name;
    if (dir) return this.done(dir, startedAtMs);
    return this.fail(
      files
        ? { reason: "permission", detail: `pid ${p.pid}: lsof shows no working directory` }
        : { reason: "unsupported", detail: `lsof output was not in the expected form (exit ${r.code})` },
    );
  }

  async environment(p: ProcessIdentity): Promise<Fact<ReadonlyMap<string, string>>> {
    const r = await this.withStart(p, "command", true);
    if (isFailure(r)) return this.fail(r);
    const env = parsePsEnvironment(r.text);
    // macOS hides other users' (and hardened) environments: no HOME means not shown, not "no home".
    return env.has("HOME")
      ? this.done(env, r.startedAtMs)
      : this.fail({ reason: "permission", detail: `pid ${p.pid}: its environment is not visible to this agent` });
  }

  /** Every live process: a table started by this call, so a process created before it is in it (a hire's census). */
  async processes(): Promise<Fact<ProcessEntry[]>> {
    const table = await this.processTable.get(this.clock.nowMs());
    if (isFailure(table)) return this.fail(table);
    const live = [...table.value.values()].filter((r) => !r.stat.startsWith("Z"));
    return this.done(
      live.map(entryOf).sort((a, b) => a.pid - b.pid),
      table.startedAtMs,
    );
  }

  /** A group's members from a table started by this call: a member that just joined must be listed (the pane host's foreground). */
  async groupMembers(pgid: number): Promise<Fact<ProcessEntry[]>> {
    const table = await this.processTable.get(this.clock.nowMs());
    if (isFailure(table)) return this.fail(table);
    const members = [...table.value.values()].filter((r) => r.pgid === pgid && !r.stat.startsWith("Z"));
    return this.done(
      members.map(entryOf).sort((a, b) => a.pid - b.pid),
      table.startedAtMs,
    );
  }

  async home(p: ProcessIdentity, harness: HomeHarness): Promise<Fact<HomeFact>> {
    const env = await this.environment(p);
    if (!env.known) return env;
    const home = homeFromEnvironment(env.value, harness, "darwin");
    return home
      ? this.done(home, env.completedAtMs)
      : this.fail({ reason: "unsupported", detail: `pid ${p.pid} has no HOME` });
  }

  /**
   * The process's TCP listeners and bound unix sockets, filtered from the shared socket table
   * (in a pane proof, the one its connection check just read: the listener that accepted that
   * connection predates it). A reused table that shows the process holding no socket at all,
   * or a check that misses it, may predate the process: both are asked again of reads started
   * after the question.
   */
  async listeners(p: ProcessIdentity): Promise<Fact<ListenerSet>> {
    const askedAtMs = this.clock.nowMs();
    const first = await this.listenersFrom(p, -Infinity);
    const reused = !isFailure(first) && first.startedAtMs < askedAtMs;
    const retry = reused && (first.files.length === 0 || first.refused?.reason === "pid_gone");
    const found = retry ? await this.listenersFrom(p, askedAtMs) : first;
    if (isFailure(found)) return this.fail(found);
    if (found.refused) return this.fail(found.refused);
    return this.done({ listeners: listenersFromLsof(found.files), covers: ["tcp", "unix"] }, found.startedAtMs);
  }

  /** The process's sockets in a table started after `startedAfterMs`, and why its lifetime check refused them, if it did. */
  private async listenersFrom(
    p: ProcessIdentity,
    startedAfterMs: number,
  ): Promise<{ files: LsofFile[]; startedAtMs: number; refused: Failure | undefined } | Failure> {
    const sockets = await this.socketTable.get(startedAfterMs);
    if (isFailure(sockets)) return sockets;
    const checked = await this.checkedAfter(p, sockets.finishedAtMs, true);
    return {
      files: sockets.value.filter((f) => f.pid === p.pid),
      startedAtMs: sockets.startedAtMs,
      refused: isFailure(checked) ? checked : undefined,
    };
  }

  /** From a socket table started by this call: the agent's connection may be younger than any earlier table. */
  async connectionPeer(tuple: TcpTuple): Promise<Fact<ConnectionPeer>> {
    const sockets = await this.socketTable.get(this.clock.nowMs());
    if (isFailure(sockets)) return this.fail(sockets);
    const ends = sockets.value
      .filter((f) => (f.type === "IPv4" || f.type === "IPv6") && f.tcpState === "ESTABLISHED")
      .map((f) => {
        const [l, rem] = f.name.split("->");
        return { pid: f.pid, local: parseLsofEndpoint(l ?? ""), remote: parseLsofEndpoint(rem ?? "") };
      });
    const is = (e: { address: string; port: number } | undefined, address: string, port: number) =>
      e !== undefined && e.port === port && sameAddress(e.address, address);
    const isAgentEnd = ends.some(
      (e) =>
        e.pid === this.agentPid &&
        is(e.local, tuple.localAddress, tuple.localPort) &&
        is(e.remote, tuple.remoteAddress, tuple.remotePort),
    );
    const peerPids = new Set(
      ends
        .filter(
          (e) =>
            is(e.local, tuple.remoteAddress, tuple.remotePort) && is(e.remote, tuple.localAddress, tuple.localPort),
        )
        .map((e) => e.pid),
    );
    // The holders' lifetimes from a table read after the sockets: one that exited meanwhile leaves the answer incomplete.
    let peers: ProcessIdentity[] = [];
    if (peerPids.size) {
      const table = await this.processTable.get(sockets.finishedAtMs);
      if (isFailure(table)) return this.fail(table);
      peers = [...peerPids].flatMap((pid) => {
        const row = table.value.get(pid);
        return row ? [{ pid, startTime: row.startTime }] : [];
      });
    }
    return this.done(
      { tuple, isAgentEnd, peers, isComplete: this.ownUid === 0 && peers.length === peerPids.size },
      sockets.startedAtMs,
    );
  }

  async unixConnectionPeer(): Promise<Fact<UnixConnectionPeer>> {
    return this.fail({
      reason: "unsupported",
      detail: "a unix-socket connection's peer: lsof -U shows no peer socket on macOS; not implemented",
    });
  }

  async unixConnections(): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>> {
    return this.fail({
      reason: "unsupported",
      detail: "a process's unix-socket connections: lsof -U shows no peer socket on macOS; not implemented",
    });
  }
}
