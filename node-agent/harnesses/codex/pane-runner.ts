/**
 * What a hired Codex pane runs (ADR 0040 addendum "A private app-server per hired Codex"):
 * a dedicated `codex app-server --listen unix://SOCK` carrying the hire's configuration, then
 * the TUI attached to it with `codex --remote unix://SOCK`, both children of this process in
 * the pane's own foreground group, so the kernel proves the backend is the pane's (never the
 * account daemon, whose MCP children sit under whichever pane started it). No shell is
 * involved: the spec file names argv vectors only, written by the agent (launch-codex.ts).
 * When either child ends, the other is stopped and this process exits with the TUI's code, so
 * a launch that failed is a dead pane the hire can read and close.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, rmSync } from "node:fs";
import { serverArgv, tuiArgv, type CodexPaneSpec } from "./pane-plan.js";

export type { CodexPaneSpec } from "./pane-plan.js";

const SOCKET_WAIT_MS = 20_000;

function tail(path: string): string {
  try {
    return readFileSync(path, "utf8").split("\n").filter(Boolean).slice(-8).join("\n");
  } catch {
    return "";
  }
}

const KILL_AFTER_MS = 5_000;

/** SIGTERM, then SIGKILL if it is still there (the timer lives only as long as the child keeps us up). */
function stop(child: ChildProcess | undefined): void {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  setTimeout(
    () => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"),
    KILL_AFTER_MS,
  ).unref();
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8")) as CodexPaneSpec;
  rmSync(spec.socketPath, { force: true });
  const log = openSync(spec.serverLog, "a", 0o600);
  // Not detached: it stays in the pane's foreground group, so the pane's hangup reaches it too.
  const server = spawn(spec.bin, serverArgv(spec), { stdio: ["ignore", "ignore", log] });
  closeSync(log);
  let tui: ChildProcess | undefined;
  const finish = (code: number) => {
    stop(tui);
    stop(server);
    process.exitCode = code;
  };
  for (const sig of ["SIGHUP", "SIGTERM"] as const) process.on(sig, () => finish(129));
  // The TUI reads the terminal raw; an interrupt typed before that is the TUI's, not ours.
  process.on("SIGINT", () => undefined);
  server.on("exit", (code, signal) => {
    if (tui && tui.exitCode === null) stop(tui);
    else if (!tui) {
      process.stderr.write(
        `codex app-server exited (${signal ?? code}) before it listened:\n${tail(spec.serverLog)}\n`,
      );
      finish(1);
    }
  });
  const deadline = Date.now() + SOCKET_WAIT_MS;
  while (
    !existsSync(spec.socketPath) &&
    server.exitCode === null &&
    server.signalCode === null &&
    Date.now() < deadline
  )
    await new Promise((r) => setTimeout(r, 50));
  if (server.exitCode !== null || server.signalCode !== null) return;
  if (!existsSync(spec.socketPath)) {
    process.stderr.write(
      `codex app-server did not listen on ${spec.socketPath} within ${SOCKET_WAIT_MS / 1000} s:\n${tail(spec.serverLog)}\n`,
    );
    return finish(1);
  }
  tui = spawn(spec.bin, tuiArgv(spec), { stdio: "inherit" });
  tui.on("exit", (code, signal) => {
    stop(server);
    process.exitCode = code ?? (signal ? 128 : 1);
  });
}

void main().catch((e: Error) => {
  process.stderr.write(`clankie codex pane: ${e.message}\n`);
  process.exitCode = 1;
});
