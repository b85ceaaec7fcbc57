/**
 * The Linux proof provider: reads /proc directly (stack spike §7: 6-9 ms for a whole lookup,
 * where systeminformation forks netstat/ps for 30-50 ms and caches for 500 ms). Reads are
 * synchronous on purpose: each is a few µs of kernel-generated text, and the thread pool
 * would only add queueing to the proof age. Only facts that cannot change while a socket
 * lives are remembered (ADR 0010); the one child process is `ss`, for a unix socket's peer,
 * once per socket.
 */
import { execFile } from "node:child_process";
import { readlinkSync } from "node:fs";
import { promisify } from "node:util";
import { systemMonotonicClock, type MonotonicClock } from "./proof.js";
import {
  parseNetTcp,
  parseNetUnix,
  parseSsUnix,
  socketInode,
  ttyName,
  TCP_CLOSE,
  TCP_ESTABLISHED,
  TCP_LISTEN,
  type ProcStat,
  type TcpRow,
  type UnixRow,
} from "./linux-proc.js";
import {
  allPids,
  checkIdentity,
  isFailure,
  readCmdline,
  readCwd,
  readEnviron,
  readNet,
  readStat,
  reasonOf,
  socketInodes,
  type Failure,
} from "./linux-read.js";
import {
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
  type TcpTuple,
  type UnixConnectionPeer,
  type CommandLine,
} from "./provider.js";

const execFileAsync = promisify(execFile);

function entryOf(s: ProcStat): ProcessEntry {
  return { pid: s.pid, startTime: s.startTicks, ppid: s.ppid, pgid: s.pgrp, name: s.name };
}

const MAX_ANCESTRY_DEPTH = 64;
/** Processes whose descriptors are read between two yields to the event loop (~0.5 ms here). */
const HOLDER_SCAN_SLICE = 16;

export class LinuxProofProvider implements ProofProvider {
  readonly platform = "linux";

  constructor(private readonly clock: MonotonicClock = systemMonotonicClock) {}

  private fail<T>(f: Failure): Fact<T> {
    return fact.unknown<T>(f.reason, f.detail, this.clock.nowMs());
  }

  private done<T>(value: T): Fact<T> {
    return fact.known(value, this.clock.nowMs());
  }

  /**
   * Reading /proc/net/tcp walks the kernel's whole connection hash, whatever the row count
   * (several ms on a busy host), so tcp6 is read only when tcp left something unfound.
   */
  private tcpRows(pid: number | "self", isFound: (rows: TcpRow[]) => boolean): TcpRow[] | Failure {
    const v4 = readNet(pid, "tcp");
    if (isFailure(v4)) return v4;
    const rows = parseNetTcp(v4);
    if (isFound(rows)) return rows;
    const v6 = readNet(pid, "tcp6");
    if (isFailure(v6)) return v6;
    return [...rows, ...parseNetTcp(v6)];
  }

  async identify(pid: number): Promise<Fact<ProcessEntry>> {
    const s = readStat(pid);
    return isFailure(s) ? this.fail(s) : this.done(entryOf(s));
  }

  async ancestry(process: ProcessIdentity): Promise<Fact<Ancestry>> {
    const self = checkIdentity(process);
    if (isFailure(self)) return this.fail(self);
    const chain: ProcessEntry[] = [entryOf(self)];
    let child = self;
    let broken = false;
    while (child.ppid > 0 && chain.length < MAX_ANCESTRY_DEPTH) {
      const parent = readStat(child.ppid);
      if (isFailure(parent)) {
        if (parent.reason === "permission") return this.fail(parent);
        broken = true;
        break;
      }
      // A parent started after its child is a different process that reused the pid.
      if (parent.startTicks > child.startTicks) {
        broken = true;
        break;
      }
      chain.push(entryOf(parent));
      child = parent;
    }
    const after = checkIdentity(process);
    return isFailure(after) ? this.fail(after) : this.done({ chain, broken });
  }

  async foregroundGroup(process: ProcessIdentity): Promise<Fact<ForegroundGroup>> {
    const s = checkIdentity(process);
    if (isFailure(s)) return this.fail(s);
    if (s.ttyNr === 0 || s.tpgid <= 0) return this.done({ tty: ttyName(s.ttyNr), foregroundPgid: -1 });
    const after = checkIdentity(process);
    if (isFailure(after)) return this.fail(after);
    if (after.tpgid !== s.tpgid)
      return this.fail({
        reason: "race",
        detail: `the terminal's foreground group changed from ${s.tpgid} to ${after.tpgid} while it was read`,
      });
    return this.done({ tty: ttyName(s.ttyNr), foregroundPgid: s.tpgid });
  }

  /** Reads `read` between two identity checks, so the answer belongs to the recorded lifetime. */
  private between<T>(process: ProcessIdentity, read: () => T | Failure): T | Failure {
    const s = checkIdentity(process);
    if (isFailure(s)) return s;
    const value = read();
    if (isFailure(value)) return value;
    const after = checkIdentity(process);
    return isFailure(after) ? after : value;
  }

  async commandLine(process: ProcessIdentity): Promise<Fact<CommandLine>> {
    const argv = this.between(process, () => readCmdline(process.pid));
    return isFailure(argv) ? this.fail(argv) : this.done({ argv, isExact: true });
  }

  async cwd(process: ProcessIdentity): Promise<Fact<string>> {
    const cwd = this.between(process, () => readCwd(process.pid));
    return isFailure(cwd) ? this.fail(cwd) : this.done(cwd);
  }

  async environment(process: ProcessIdentity): Promise<Fact<ReadonlyMap<string, string>>> {
    const env = this.between(process, () => readEnviron(process.pid));
    return isFailure(env) ? this.fail(env) : this.done(env);
  }

  async processes(): Promise<Fact<ProcessEntry[]>> {
    const all: ProcessEntry[] = [];
    for (const pid of allPids()) {
      const s = readStat(pid);
      // Gone between the listing and the read: not a live process.
      if (!isFailure(s)) all.push(entryOf(s));
    }
    return this.done(all.sort((a, b) => a.pid - b.pid));
  }

  async groupMembers(pgid: number): Promise<Fact<ProcessEntry[]>> {
    const members: ProcessEntry[] = [];
    for (const pid of allPids()) {
      const s = readStat(pid);
      // Gone or a zombie: it runs nothing in the group any more.
      if (!isFailure(s) && s.pgrp === pgid) members.push(entryOf(s));
    }
    return this.done(members.sort((a, b) => a.pid - b.pid));
  }

  async home(process: ProcessIdentity, harness: HomeHarness): Promise<Fact<HomeFact>> {
    const env = this.between(process, () => readEnviron(process.pid));
    if (isFailure(env)) return this.fail(env);
    const home = homeFromEnvironment(env, harness, "linux");
    if (!home) return this.fail({ reason: "unsupported", detail: `pid ${process.pid} has no HOME in its environment` });
    return this.done(home);
  }

  /**
   * TCP sockets whose kind cannot change while they live, by inode (unique among live sockets
   * across namespaces): a listening socket and its address, or one that is connected or of
   * another protocol and so will never listen. The slow TCP table is read only when the
   * process holds a socket not settled here; which sockets it holds is read fresh every call.
   */
  private readonly settledSockets = new Map<number, Listener | "never_listens">();

  /** The sockets a recorded process lifetime holds now, with its namespace's unix table. */
  private socketsOf(process: ProcessIdentity): { inodes: Set<number>; unix: UnixRow[] } | Failure {
    const s = checkIdentity(process);
    if (isFailure(s)) return s;
    const inodes = socketInodes(process.pid);
    if (isFailure(inodes)) return inodes;
    const unixText = readNet(process.pid, "unix");
    if (isFailure(unixText)) return unixText;
    return { inodes, unix: parseNetUnix(unixText) };
  }

  async listeners(process: ProcessIdentity): Promise<Fact<ListenerSet>> {
    const held = this.socketsOf(process);
    if (isFailure(held)) return this.fail(held);
    const { inodes, unix } = held;
    const unixInodes = new Set(unix.map((r) => r.inode));
    const unsettled = [...inodes].filter((i) => !unixInodes.has(i) && !this.settledSockets.has(i));
    if (unsettled.length) {
      // The process's own network namespace, which may differ from the agent's. Every socket
      // it holds must be accounted for before tcp6 can be skipped.
      const tcp = this.tcpRows(process.pid, (rows) => {
        const seen = new Set(rows.map((r) => r.inode));
        return unsettled.every((i) => seen.has(i));
      });
      if (isFailure(tcp)) return this.fail(tcp);
      if (this.settledSockets.size > 50_000) this.settledSockets.clear();
      for (const r of tcp) {
        if (!inodes.has(r.inode)) continue;
        if (r.state === TCP_LISTEN)
          this.settledSockets.set(r.inode, {
            transport: "tcp",
            address: r.localAddress,
            port: r.localPort,
            isLoopback: isLoopbackAddress(r.localAddress),
          });
        // A socket that is still unconnected (CLOSE) may listen later; once connected it never will.
        else if (r.state !== TCP_CLOSE) this.settledSockets.set(r.inode, "never_listens");
      }
      // A socket in neither table stays unsettled: it may be UDP, or a TCP socket not yet bound
      // into the kernel's tables that could still listen.
    }
    const listeners: Listener[] = [
      ...[...inodes].map((i) => this.settledSockets.get(i)).filter((l): l is Listener => typeof l === "object"),
      ...unix
        .filter((r) => r.isListening && inodes.has(r.inode))
        .map((r): Listener => ({ transport: "unix", path: r.path })),
    ];
    const after = checkIdentity(process);
    return isFailure(after) ? this.fail(after) : this.done({ listeners, covers: ["tcp", "unix"] });
  }

  /**
   * A connected TCP socket's four-tuple, and so the socket at its other end, never change
   * while it lives: the kernel's table (the slow read, a walk of its whole connection hash)
   * is read once per connection of the agent's, keyed by the agent's own socket inode. What
   * can change — whether the agent still holds that socket, and which processes hold the
   * other end — is read fresh on every call.
   */
  private readonly endsOfConnection = new Map<string, { agentInode: number; peerInode: number }>();

  async connectionPeer(tuple: TcpTuple): Promise<Fact<ConnectionPeer>> {
    const own = socketInodes("self");
    if (isFailure(own)) return this.fail(own);
    for (const [key, ends] of this.endsOfConnection) if (!own.has(ends.agentInode)) this.endsOfConnection.delete(key);
    const key = `${tuple.localAddress}:${tuple.localPort}>${tuple.remoteAddress}:${tuple.remotePort}`;
    let ends = this.endsOfConnection.get(key);
    let isAgentEnd = ends !== undefined;
    if (!ends) {
      const isAgentRow = (r: TcpRow) =>
        r.state === TCP_ESTABLISHED &&
        sameAddress(r.localAddress, tuple.localAddress) &&
        r.localPort === tuple.localPort &&
        sameAddress(r.remoteAddress, tuple.remoteAddress) &&
        r.remotePort === tuple.remotePort;
      const isPeerRow = (r: TcpRow) =>
        r.state === TCP_ESTABLISHED &&
        sameAddress(r.localAddress, tuple.remoteAddress) &&
        r.localPort === tuple.remotePort &&
        sameAddress(r.remoteAddress, tuple.localAddress) &&
        r.remotePort === tuple.localPort;
      const rows = this.tcpRows("self", (found) => found.some(isAgentRow) && found.some(isPeerRow));
      if (isFailure(rows)) return this.fail(rows);
      const agentRow = rows.find(isAgentRow);
      const peerRow = rows.find(isPeerRow);
      isAgentEnd = agentRow !== undefined && own.has(agentRow.inode);
      if (!peerRow) return this.done({ tuple, isAgentEnd, peers: [], isComplete: true });
      ends = { agentInode: agentRow?.inode ?? -1, peerInode: peerRow.inode };
      // Only a connection the agent holds is remembered: its inode is how a later call knows it is the same one.
      if (isAgentEnd) this.endsOfConnection.set(key, ends);
    }
    return this.done({ tuple, isAgentEnd, ...(await this.holdersOf([ends.peerInode])).get(ends.peerInode)! });
  }

  /**
   * Every live process holding each socket, read fresh; incomplete when some process could not
   * be inspected. The walk over every process's descriptors is the costliest read, so it yields
   * to the event loop every few processes: the agent's other requests, and the PINGs that bound
   * a request's transit (link-round-trips.ts), do not wait behind it.
   */
  private async holdersOf(sockets: number[]): Promise<Map<number, { peers: ProcessIdentity[]; isComplete: boolean }>> {
    const out = new Map(sockets.map((i) => [i, { peers: [] as ProcessIdentity[], isComplete: true }]));
    let isComplete = true;
    let walked = 0;
    for (const pid of allPids()) {
      if (++walked % HOLDER_SCAN_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const inodes = socketInodes(pid);
      if (isFailure(inodes)) {
        if (inodes.reason === "permission") isComplete = false;
        continue;
      }
      const held = sockets.filter((i) => inodes.has(i));
      if (!held.length) continue;
      const s = readStat(pid);
      if (!isFailure(s)) for (const i of held) out.get(i)!.peers.push({ pid: s.pid, startTime: s.startTicks });
    }
    for (const v of out.values()) v.isComplete = isComplete;
    return out;
  }

  /**
   * A connected unix socket's peer never changes while it lives, so the kernel's pairing (only
   * sock_diag has it: `ss -xHn`, a fork) is read once per socket and kept by inode; who holds
   * the peer is read fresh on every call.
   */
  private readonly unixPairs = new Map<number, { path: string; peerInode: number }>();

  private async unixPairOf(inodes: number[]): Promise<Failure | undefined> {
    if (inodes.every((i) => this.unixPairs.has(i))) return undefined;
    let stdout: string;
    try {
      stdout = (await execFileAsync("ss", ["-xHn"], { timeout: 5000, maxBuffer: 16 * 1024 * 1024 })).stdout;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return {
        reason: code === "ENOENT" ? "unsupported" : "race",
        detail:
          code === "ENOENT"
            ? "ss (iproute2) is not installed: unix-socket peers cannot be named"
            : `ss -xHn failed: ${(e as Error).message}`,
      };
    }
    if (this.unixPairs.size > 50_000) this.unixPairs.clear();
    const pairs = parseSsUnix(stdout);
    const byInode = new Map(pairs.map((p) => [p.inode, p]));
    for (const p of pairs)
      this.unixPairs.set(p.inode, { path: byInode.get(p.peerInode)?.path ?? "", peerInode: p.peerInode });
    return undefined;
  }

  async unixConnectionPeer(agentFd: number): Promise<Fact<UnixConnectionPeer>> {
    let inode: number | undefined;
    try {
      inode = socketInode(readlinkSync(`/proc/self/fd/${agentFd}`));
    } catch (e) {
      // A closed descriptor is a connection the agent no longer holds: an answer, not an unknown.
      if ((e as NodeJS.ErrnoException).code === "ENOENT")
        return this.done({ peerPath: "", isAgentEnd: false, peers: [], isComplete: true });
      return this.fail(reasonOf(e, `descriptor ${agentFd} of this agent`));
    }
    if (inode === undefined) return this.done({ peerPath: "", isAgentEnd: false, peers: [], isComplete: true });
    const failed = await this.unixPairOf([inode]);
    if (failed) return this.fail(failed);
    const pair = this.unixPairs.get(inode);
    if (!pair) return this.done({ peerPath: "", isAgentEnd: false, peers: [], isComplete: true });
    const own = socketInodes("self");
    if (isFailure(own)) return this.fail(own);
    return this.done({
      peerPath: pair.path,
      isAgentEnd: own.has(inode),
      ...(await this.holdersOf([pair.peerInode])).get(pair.peerInode)!,
    });
  }

  async unixConnections(process: ProcessIdentity): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>> {
    const held = this.socketsOf(process);
    if (isFailure(held)) return this.fail(held);
    const connected = held.unix.filter((r) => !r.isListening && held.inodes.has(r.inode)).map((r) => r.inode);
    const failed = await this.unixPairOf(connected);
    if (failed) return this.fail(failed);
    const paired = connected.flatMap((i) => (this.unixPairs.has(i) ? [this.unixPairs.get(i)!] : []));
    const holders = await this.holdersOf(paired.map((p) => p.peerInode));
    const after = checkIdentity(process);
    if (isFailure(after)) return this.fail(after);
    return this.done(paired.map((p) => ({ peerPath: p.path, peers: holders.get(p.peerInode)!.peers })));
  }
}
