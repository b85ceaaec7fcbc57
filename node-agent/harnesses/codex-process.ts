/**
 * Recognises an interactive Codex TUI among a pane's foreground processes and finds its
 * control endpoint from that process itself: `--remote <endpoint>` when it joined an
 * app-server, otherwise the shared daemon socket under the process's own CODEX_HOME (never
 * the account default by accident). `--no-daemon` TUIs have an embedded server nobody else
 * can reach. Titles, banners and files are never consulted.
 */
import { basename, join, resolve } from "node:path";
import type { PaneProcess } from "../panes/pane-host.js";
import { procCwd, procEnv, procStat } from "../panes/linux-processes.js";

export type CodexLaunch = "shared_daemon" | "remote" | "no_daemon";

export interface CodexTuiProcess {
  pid: number;
  /** With the pid, names this process lifetime (pid reuse gives another). */
  startTime: number;
  codexHome: string;
  cwd: string;
  launch: CodexLaunch;
  /** `unix:///path`, `/path` or `ws://…`; undefined for `--no-daemon`. */
  endpoint: string | undefined;
}

/** Subcommands that are not the interactive TUI (they have no pane thread to deliver into). */
const NOT_TUI = new Set(["app-server", "exec", "e", "login", "logout", "mcp", "mcp-server", "proto", "completion", "sandbox", "debug", "apply", "a", "queue", "cloud", "features", "help"]);

/** argv[0] names the codex binary, or argv[1] does under an interpreter (npm's node or sh shims). */
function codexArgs(argv: string[]): string[] | undefined {
  if (argv.length === 0) return undefined;
  if (basename(argv[0]!) === "codex") return argv.slice(1);
  if (/^(node|nodejs|sh|bash|dash)$/.test(basename(argv[0]!)) && argv[1] && basename(argv[1]) === "codex") return argv.slice(2);
  return undefined;
}

export function daemonSocketPath(codexHome: string): string {
  return join(codexHome, "app-server-control", "app-server-control.sock");
}

/** Parses the TUI's flags that decide its control endpoint. */
export function codexLaunchFromArgs(args: string[]): { isTui: boolean; launch: CodexLaunch; remote: string | undefined; cd: string | undefined } {
  let remote: string | undefined;
  let cd: string | undefined;
  let noDaemon = false;
  let firstPositional: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--remote") remote = args[++i];
    else if (a.startsWith("--remote=")) remote = a.slice("--remote=".length);
    else if (a === "--no-daemon") noDaemon = true;
    else if (a === "-C" || a === "--cd") cd = args[++i];
    else if (/^-(c|m|p|s|a|i)$|^--(config|model|profile|sandbox|ask-for-approval|image|remote-auth-token-env)$/.test(a)) i++;
    else if (!a.startsWith("-") && firstPositional === undefined) firstPositional = a;
  }
  const isTui = firstPositional === undefined || !NOT_TUI.has(firstPositional);
  const launch: CodexLaunch = remote ? "remote" : noDaemon ? "no_daemon" : "shared_daemon";
  return { isTui, launch, remote, cd };
}

/**
 * The pane's Codex TUI, if one runs in its foreground. The vendored binary is preferred over
 * the node wrapper that spawned it (both carry the same environment and flags).
 */
export function findCodexTui(processes: PaneProcess[]): CodexTuiProcess | undefined {
  const candidates = processes
    .map((p) => ({ p, args: codexArgs(p.argv) }))
    .filter((c): c is { p: PaneProcess; args: string[] } => c.args !== undefined)
    .map((c) => ({ ...c, parsed: codexLaunchFromArgs(c.args) }))
    .filter((c) => c.parsed.isTui);
  if (candidates.length === 0) return undefined;
  const native = candidates.find((c) => basename(c.p.argv[0]!) === "codex") ?? candidates[0]!;
  const st = procStat(native.p.pid);
  const env = procEnv(native.p.pid);
  if (!st || !env) return undefined;
  const home = env.CODEX_HOME ?? (env.HOME ? join(env.HOME, ".codex") : undefined);
  const processCwd = native.p.cwd ?? procCwd(native.p.pid);
  // `-C DIR` makes DIR the session's working directory, whatever the process's own cwd.
  const cwd = processCwd && native.parsed.cd ? resolve(processCwd, native.parsed.cd) : processCwd;
  if (!home || !cwd) return undefined;
  const { launch, remote } = native.parsed;
  return {
    pid: native.p.pid,
    startTime: st.startTime,
    codexHome: home,
    cwd,
    launch,
    endpoint: launch === "remote" ? remote : launch === "shared_daemon" ? daemonSocketPath(home) : undefined,
  };
}

/** True while the same process lifetime is alive. */
export function isSameProcessAlive(pid: number, startTime: number): boolean {
  const st = procStat(pid);
  return st !== undefined && st.state !== "Z" && st.startTime === startTime;
}
