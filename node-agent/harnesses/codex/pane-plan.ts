/**
 * The one plan of a hired Codex's private app-server and its TUI (ADR 0040 addendum), shared
 * by both ways it is started: on tmux the pane runs codex-pane-runner.js, which starts both; on
 * Herdr (whose agent.start runs only the kind's binary) the agent starts the server itself
 * (codex-herdr-server.ts) and agent.start runs the TUI. The -c list lives in launch-codex.ts only.
 */
export interface CodexPaneSpec {
  bin: string;
  socketPath: string;
  /** Arguments after `app-server --listen unix://SOCK` (the hire's `-c` configuration). */
  serverArgs: string[];
  /** Arguments after `--remote unix://SOCK` (working directory). */
  tuiArgs: string[];
  /** The app-server's stderr goes here, so a failed start can be read. */
  serverLog: string;
}

/** The private app-server's arguments (after the binary). */
export function serverArgv(spec: Pick<CodexPaneSpec, "socketPath" | "serverArgs">): string[] {
  return ["app-server", "--listen", `unix://${spec.socketPath}`, ...spec.serverArgs];
}

/** The TUI's arguments (after the binary): it takes no override, it reads model and effort from the server. */
export function tuiArgv(spec: Pick<CodexPaneSpec, "socketPath" | "tuiArgs">): string[] {
  return ["--remote", `unix://${spec.socketPath}`, ...spec.tuiArgs];
}
