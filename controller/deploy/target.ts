/**
 * What `fleet deploy` does on one kind of target OS, behind one interface: Linux and macOS
 * (POSIX sh: posix-target.ts) and Windows (PowerShell: windows-target.ts). deploy.ts runs the
 * same checked steps on each; only the commands differ. The OS is asked, never assumed.
 */
import { FleetError, ErrorCode } from "../../shared/errors.js";
import type { AgentBundle } from "./agent-bundle.js";
import type { SshSession } from "./ssh-session.js";

export type TargetOs = "Linux" | "Darwin" | "Windows";

export interface TargetFacts {
  os: TargetOs;
  /** Absolute path of node on the target ("" when none was found). */
  node: string;
  /** `node --version` ("" when none was found). */
  version: string;
  /** The install directory (created by inspect). */
  dir: string;
  freeKb: number;
  /** The release `current` points at, if any. */
  current: string | undefined;
  previous: string | undefined;
  /** The machine name of the identity already stored on the target, if any. */
  machine: string | undefined;
}

export interface DeployTarget {
  readonly os: TargetOs;
  /** Finds node, creates the install directory, reads what is installed there. */
  inspect(remoteDir: string | undefined): Promise<TargetFacts>;
  /** Copies and unpacks a bundle as a new, inactive release and checks that it starts; returns its path. */
  unpack(f: TargetFacts, bundle: AgentBundle): Promise<string>;
  /** Enrolls the target's state directory: the join token goes on stdin only. Returns the agent's JSON line. */
  enroll(f: TargetFacts, release: string, agentUrl: string, machine: string, token: string): Promise<string>;
  /** Points `current` at `release` and `previous` at `previous` (the old current, or on rollback the release left). */
  activate(f: TargetFacts, release: string, previous: string | undefined): Promise<void>;
  /** Writes the OS's service definition for `current` and (re)starts it; returns how it runs (e.g. systemd-user). */
  restart(f: TargetFacts): Promise<string>;
  /** Keeps the three newest releases, never current or previous. */
  prune(f: TargetFacts): Promise<void>;
}

/**
 * Runs a command that must succeed; its failure is the step's failure, with the target's own
 * words. A clankie command on the target that failed with --json says its typed error on its
 * last stdout line (a used join token is permission_denied there): that code is kept. Anything
 * else that fails on the target is failed_precondition (the target is not fit for the step),
 * never `internal`: nothing went wrong inside this controller.
 */
export async function must(ssh: SshSession, cmd: string, what: string, stdin?: string): Promise<string> {
  const r = await ssh.exec(cmd, stdin);
  if (r.code === 0) return r.stdout.trim();
  const typed = typedError(r.stdout);
  if (typed) throw new FleetError(typed.code, `${what}: ${typed.message}`);
  throw new FleetError(
    ErrorCode.FailedPrecondition,
    `${what}: exit ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 400)}`,
  );
}

function typedError(stdout: string): { code: ErrorCode; message: string } | undefined {
  try {
    const e = (JSON.parse(stdout.trim().split("\n").pop() ?? "") as { error?: { code?: string; message?: string } })
      .error;
    const known: ReadonlySet<string> = new Set(Object.values(ErrorCode));
    if (e?.code && known.has(e.code) && typeof e.message === "string")
      return { code: e.code as ErrorCode, message: e.message };
  } catch {
    // not a JSON line: plain output
  }
  return undefined;
}

/** A POSIX sh single-quoted word. */
export const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The last path segment, for either separator (a release id). */
export const leaf = (p: string): string => p.split(/[\\/]/).pop()!;

/**
 * Which OS answers: `uname -s` on Linux and macOS (and Git Bash / MSYS / Cygwin shells on
 * Windows); on Windows' own OpenSSH, whose shell is cmd.exe or PowerShell, uname fails and
 * PowerShell names the platform.
 */
export async function detectOs(ssh: SshSession): Promise<TargetOs> {
  const u = await ssh.exec("uname -s");
  const name = u.code === 0 ? u.stdout.trim() : "";
  if (name === "Linux" || name === "Darwin") return name;
  if (/^(MINGW|MSYS|CYGWIN)/.test(name) || u.code !== 0) {
    const w = await ssh.exec('powershell -NoProfile -NonInteractive -Command "[Environment]::OSVersion.Platform"');
    if (w.code === 0 && w.stdout.trim() === "Win32NT") return "Windows";
  }
  throw new FleetError(
    ErrorCode.InvalidArgument,
    `the target runs ${name || "an OS that neither uname nor PowerShell names"}; fleet deploy knows Linux, macOS and Windows`,
  );
}

/** Refuses a target without a usable node before anything is copied. */
export function checkNode(f: TargetFacts): void {
  if (!f.node)
    throw new FleetError(
      ErrorCode.InvalidArgument,
      `no node on the target's PATH${f.os === "Windows" ? "" : " (nor in /opt/homebrew/bin or /usr/local/bin)"}: Node 20 or newer is needed`,
    );
  const major = Number(/^v(\d+)/.exec(f.version)?.[1] ?? 0);
  if (major < 20)
    throw new FleetError(ErrorCode.InvalidArgument, `the target has Node ${f.version}; Node 20 or newer is needed`);
}
