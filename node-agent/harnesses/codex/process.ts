/**
 * Recognises an interactive Codex TUI among a pane's foreground processes and finds its
 * control endpoint from that process itself: `--remote <endpoint>` when it joined an
 * app-server, otherwise the shared daemon socket under the process's own CODEX_HOME (never
 * the account default by accident). `--no-daemon` TUIs have an embedded server nobody else
 * can reach. Every process fact (lifetime, environment, cwd) comes from the ProofProvider;
 * one it cannot tell refuses the seat with the provider's reason (CodexFactUnknownError).
 * Titles, banners and files are never consulted.
 */
import { posix, win32 } from "node:path";
import type { PaneProcess } from "../../panes/pane-host.js";
import { programName, type ProofProvider, type UnknownReason } from "../../proofs/provider.js";

export type CodexLaunch = "shared_daemon" | "remote" | "no_daemon";

export interface CodexTuiProcess {
  pid: number;
  /** With the pid, names this process lifetime (pid reuse gives another). */
  startTime: number;
  codexHome: string;
  /** Which variable decided the home (CODEX_HOME, HOME or USERPROFILE): the default home is the one no CODEX_HOME chose. */
  homeVariable: string;
  cwd: string;
  launch: CodexLaunch;
  /** `-p/--profile NAME`: a profile launch, which Windows control refuses (rule 38). */
  profile: string | undefined;
  /** `unix:///path`, `/path` or `ws://…`; undefined for `--no-daemon`. */
  endpoint: string | undefined;
}

/** A fact the seat needs could not be established: no seat, and the reason says why. */
export class CodexFactUnknownError extends Error {
  readonly code = "codex_fact_unknown";
  constructor(
    readonly fact: "identity" | "home" | "cwd",
    readonly reason: UnknownReason,
    detail: string,
  ) {
    super(`Codex TUI ${fact} unknown (${reason}): ${detail}`);
  }
}

/** Subcommands that are not the interactive TUI (they have no pane thread to deliver into). */
const NOT_TUI = new Set([
  "app-server",
  "exec",
  "e",
  "login",
  "logout",
  "mcp",
  "mcp-server",
  "proto",
  "completion",
  "sandbox",
  "debug",
  "apply",
  "a",
  "queue",
  "cloud",
  "features",
  "help",
]);

/** argv[0] names the codex binary, or argv[1] does under an interpreter (npm's node or sh shims). */
function codexArgs(argv: string[]): string[] | undefined {
  if (argv.length === 0) return undefined;
  if (programName(argv[0]!) === "codex") return argv.slice(1);
  if (/^(node|nodejs|sh|bash|dash)$/.test(programName(argv[0]!)) && argv[1] && programName(argv[1]) === "codex")
    return argv.slice(2);
  return undefined;
}

export function daemonSocketPath(codexHome: string, platform: string = process.platform): string {
  return (platform === "win32" ? win32 : posix).join(codexHome, "app-server-control", "app-server-control.sock");
}

/** Parses the TUI's flags that decide its control endpoint. */
export function codexLaunchFromArgs(args: string[]): {
  isTui: boolean;
  launch: CodexLaunch;
  remote: string | undefined;
  cd: string | undefined;
  profile: string | undefined;
} {
  let remote: string | undefined;
  let cd: string | undefined;
  let profile: string | undefined;
  let noDaemon = false;
  let firstPositional: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--remote") remote = args[++i];
    else if (a.startsWith("--remote=")) remote = a.slice("--remote=".length);
    else if (a === "--no-daemon") noDaemon = true;
    else if (a === "-C" || a === "--cd") cd = args[++i];
    else if (a === "-p" || a === "--profile") profile = args[++i] ?? "";
    else if (a.startsWith("--profile=")) profile = a.slice("--profile=".length);
    else if (/^-(c|m|s|a|i)$|^--(config|model|sandbox|ask-for-approval|image|remote-auth-token-env)$/.test(a)) i++;
    else if (!a.startsWith("-") && firstPositional === undefined) firstPositional = a;
  }
  const isTui = firstPositional === undefined || !NOT_TUI.has(firstPositional);
  const launch: CodexLaunch = remote ? "remote" : noDaemon ? "no_daemon" : "shared_daemon";
  return { isTui, launch, remote, cd, profile };
}

/**
 * The pane's Codex TUI, if one runs in its foreground. The vendored binary is preferred over
 * the node wrapper that spawned it (both carry the same environment and flags).
 */
export async function findCodexTui(
  processes: PaneProcess[],
  provider: ProofProvider,
): Promise<CodexTuiProcess | undefined> {
  const candidates = processes
    .map((p) => ({ p, args: codexArgs(p.argv) }))
    .filter((c): c is { p: PaneProcess; args: string[] } => c.args !== undefined)
    .map((c) => ({ ...c, parsed: codexLaunchFromArgs(c.args) }))
    .filter((c) => c.parsed.isTui);
  if (candidates.length === 0) return undefined;
  const native = candidates.find((c) => programName(c.p.argv[0]!) === "codex") ?? candidates[0]!;
  const id = await provider.identify(native.p.pid);
  if (!id.known) throw new CodexFactUnknownError("identity", id.reason, id.detail);
  const [home, processCwd] = await Promise.all([provider.home(id.value, "codex"), provider.cwd(id.value)]);
  if (!home.known) throw new CodexFactUnknownError("home", home.reason, home.detail);
  if (!processCwd.known) throw new CodexFactUnknownError("cwd", processCwd.reason, processCwd.detail);
  const path = provider.platform === "win32" ? win32 : posix;
  // `-C DIR` makes DIR the session's working directory, whatever the process's own cwd.
  const cwd = native.parsed.cd ? path.resolve(processCwd.value, native.parsed.cd) : processCwd.value;
  const { launch, remote, profile } = native.parsed;
  return {
    pid: native.p.pid,
    startTime: id.value.startTime,
    codexHome: home.value.path,
    homeVariable: home.value.variable,
    cwd,
    launch,
    profile,
    endpoint:
      launch === "remote"
        ? remote
        : launch === "shared_daemon"
          ? daemonSocketPath(home.value.path, provider.platform)
          : undefined,
  };
}

/** True while the same process lifetime is alive; unknown when the provider cannot tell. */
export async function isSameProcessAlive(
  provider: ProofProvider,
  pid: number,
  startTime: number,
): Promise<boolean | { unknown: string }> {
  const f = await provider.identify(pid);
  if (f.known) return f.value.startTime === startTime;
  return f.reason === "pid_gone" ? false : { unknown: `${f.reason}: ${f.detail}` };
}
