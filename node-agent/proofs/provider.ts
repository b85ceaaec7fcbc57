/**
 * The ProofProvider interface: the kernel facts a pane proof needs, one method per fact,
 * each answered as a typed `Fact` stamped on the monotonic clock when it completed.
 * `unknown` (permission, pid_gone, race, unsupported) is a normal answer, never a throw.
 * This file is just the types and small pure helpers; each OS has its own file.
 */
import { posix, win32 } from "node:path";

/** Why a fact could not be established. */
export type UnknownReason = "permission" | "pid_gone" | "race" | "unsupported";

export type Fact<T> =
  | { known: true; value: T; completedAtMs: number }
  | { known: false; reason: UnknownReason; detail: string; completedAtMs: number };

/**
 * One process lifetime: pid plus the kernel's start time in the platform's own unit
 * (Linux: raw clock ticks since boot from /proc/PID/stat; macOS: seconds from `ps lstart`;
 * Windows: milliseconds of CreationDate). Compared for equality and order only, never
 * converted to wall time, so a reused pid is a different identity.
 */
export interface ProcessIdentity {
  pid: number;
  startTime: number;
}

export interface ProcessEntry extends ProcessIdentity {
  ppid: number;
  /** Process group; -1 where the platform has none (Windows). Group ids are unique while the group lives. */
  pgid: number;
  name: string;
}

/** From the process up to the root; `broken` when a parent pid turned out to be a later process (pid reused). */
export interface Ancestry {
  chain: ProcessEntry[];
  broken: boolean;
}

export interface ForegroundGroup {
  /** The controlling terminal of the process asked about, e.g. "/dev/pts/3"; "" when it has none. */
  tty: string;
  /** The terminal's foreground process group; -1 when there is none. A process is in it when its pgid equals this. */
  foregroundPgid: number;
}

/** Harnesses whose private home is read from the process environment. */
export type HomeHarness = "codex" | "claude" | "other";

export interface HomeFact {
  /** The variable that decided it (CODEX_HOME, CLAUDE_CONFIG_DIR or HOME). */
  variable: string;
  /** The harness's effective home directory for this process. */
  path: string;
}

export type Listener =
  | { transport: "tcp"; address: string; port: number; isLoopback: boolean }
  | { transport: "unix"; path: string };

export interface ListenerSet {
  listeners: Listener[];
  /** Which transports were actually inspected: an absent one is not "none". */
  covers: ("tcp" | "unix")[];
}

/** A TCP connection as seen from the agent's end. */
export interface TcpTuple {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
}

export interface ConnectionPeer {
  tuple: TcpTuple;
  /** The kernel shows the agent's end established and held by this agent process. */
  isAgentEnd: boolean;
  /** The process lifetimes holding the other end. */
  peers: ProcessIdentity[];
  /** False when some processes could not be inspected, so `peers` may not be all of them. */
  isComplete: boolean;
}

/** A unix-socket connection as seen from the agent's end (its descriptor in the agent). */
export interface UnixConnectionPeer {
  /** The listening path the other end was accepted on; "" when unnamed. */
  peerPath: string;
  /** The descriptor is a connected socket of this agent's. */
  isAgentEnd: boolean;
  /** The process lifetimes holding the other end. */
  peers: ProcessIdentity[];
  isComplete: boolean;
}

/**
 * A process's command line. `isExact` is false where the platform gives only the joined text
 * (macOS `ps -o args`), which is split at whitespace: an argument holding a space is then two.
 */
export interface CommandLine {
  argv: string[];
  isExact: boolean;
}

/** One kernel fact per method; every method that takes an identity re-checks it, so pid reuse is caught. */
export interface ProofProvider {
  readonly platform: string;
  identify(pid: number): Promise<Fact<ProcessEntry>>;
  commandLine(process: ProcessIdentity): Promise<Fact<CommandLine>>;
  /** The process's current working directory. */
  cwd(process: ProcessIdentity): Promise<Fact<string>>;
  /** The process's environment as the kernel holds it (Linux and Windows: as at exec; macOS: ps -E). */
  environment(process: ProcessIdentity): Promise<Fact<ReadonlyMap<string, string>>>;
  /** Every live process on the host (a hire's census looks for its marker among them); `unsupported` where there is no cheap table. */
  processes(): Promise<Fact<ProcessEntry[]>>;
  /** The live members of one process group (a terminal's foreground group); `unsupported` where there are no groups. */
  groupMembers(pgid: number): Promise<Fact<ProcessEntry[]>>;
  ancestry(process: ProcessIdentity): Promise<Fact<Ancestry>>;
  foregroundGroup(process: ProcessIdentity): Promise<Fact<ForegroundGroup>>;
  home(process: ProcessIdentity, harness: HomeHarness): Promise<Fact<HomeFact>>;
  listeners(process: ProcessIdentity): Promise<Fact<ListenerSet>>;
  connectionPeer(tuple: TcpTuple): Promise<Fact<ConnectionPeer>>;
  /** Who holds the other end of the agent's own unix-socket connection on descriptor `agentFd`. */
  unixConnectionPeer(agentFd: number): Promise<Fact<UnixConnectionPeer>>;
  /** The unix-socket connections `process` holds, each with the path its other end was accepted on and who holds that end. */
  unixConnections(process: ProcessIdentity): Promise<Fact<{ peerPath: string; peers: ProcessIdentity[] }[]>>;
  /** Releases a long-lived reader the provider keeps (Windows' PowerShell host); absent where there is none. */
  close?(): void;
}

export function sameIdentity(a: ProcessIdentity, b: ProcessIdentity): boolean {
  return a.pid === b.pid && a.startTime === b.startTime;
}

export function describeIdentity(p: ProcessIdentity): string {
  return `pid ${p.pid} (start ${p.startTime})`;
}

/** The harness's home from an environment, the way the harness itself resolves it. */
export function homeFromEnvironment(
  env: ReadonlyMap<string, string>,
  harness: HomeHarness,
  platform: string,
): HomeFact | undefined {
  const join = platform === "win32" ? win32.join : posix.join;
  const own = harness === "codex" ? "CODEX_HOME" : harness === "claude" ? "CLAUDE_CONFIG_DIR" : undefined;
  if (own && env.get(own)) return { variable: own, path: env.get(own)! };
  // Windows builds of Codex and Claude take the profile folder, not HOME (which Git Bash sets, often as /c/Users/x).
  const variable = platform === "win32" ? (env.get("USERPROFILE") ? "USERPROFILE" : "HOME") : "HOME";
  const home = env.get(variable);
  if (!home) return undefined;
  const dir = harness === "codex" ? ".codex" : harness === "claude" ? ".claude" : "";
  return { variable, path: dir ? join(home, dir) : home };
}

/** Whether two homes are the same directory by name (Windows paths compare case-insensitively). */
export function sameHome(a: string, b: string, platform: string): boolean {
  if (platform === "win32") return win32.resolve(a).toLowerCase() === win32.resolve(b).toLowerCase();
  return posix.resolve(a) === posix.resolve(b);
}

export function isLoopbackAddress(address: string): boolean {
  const a = address.replace(/^::ffff:/i, "");
  return a.startsWith("127.") || a === "::1" || a === "localhost";
}

/** Addresses as Node and the kernel print them differ for v4-mapped sockets; compare them plain. */
export function sameAddress(a: string, b: string): boolean {
  const norm = (x: string) =>
    x
      .replace(/^\[|\]$/g, "")
      .replace(/^::ffff:/i, "")
      .toLowerCase();
  return norm(a) === norm(b);
}

/** Known facts and unknown ones, built the same way by every provider. */
export const fact = {
  known<T>(value: T, completedAtMs: number): Fact<T> {
    return { known: true, value, completedAtMs };
  },
  unknown<T>(reason: UnknownReason, detail: string, completedAtMs: number): Fact<T> {
    return { known: false, reason, detail, completedAtMs };
  },
};

/**
 * Ancestry from one snapshot of the process table (macOS ps, Windows Win32_Process): walk
 * parent pids while each parent started no later than its child; a later one reused the pid.
 */
export function ancestryFromTable(table: ReadonlyMap<number, ProcessEntry>, start: ProcessEntry): Ancestry {
  const chain: ProcessEntry[] = [start];
  let child = start;
  while (child.ppid > 0 && child.ppid !== child.pid && chain.length < 64) {
    const parent = table.get(child.ppid);
    if (!parent || parent.startTime > child.startTime) return { chain, broken: true };
    chain.push(parent);
    child = parent;
  }
  return { chain, broken: false };
}

/** A program's name without its folder (either separator) or `.exe`/`.cmd`, lower-cased: "C:\\x\\Codex.EXE" → "codex". */
export function programName(arg: string): string {
  return (arg.split(/[\\/]/).pop() ?? arg).replace(/\.(exe|cmd|ps1)$/i, "").toLowerCase();
}
