/**
 * A hired Codex's private app-server started by the agent itself, for a pane host whose
 * launch runs only the kind's binary (Herdr's agent.start; ADR 0040 addendum "Herdr"). Same
 * plan as the tmux pane runner (codex-pane-plan.ts), carrying the hire marker so the census
 * sees it, in the working directory, with the owner's hire environment (its CODEX_HOME). It is
 * detached (its own process group, so its MCP children are stopped with it) and outlives an
 * agent restart: its exact lifetime (pid + start time) goes into the hire's host journal entry,
 * from which the server keeper (codex-server-keeper.ts) stops it once the pane's TUI is gone.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, rmSync } from "node:fs";
import type { ProcessEntry, ProofProvider } from "../../proofs/provider.js";
import { boundPathOf } from "../../proofs/socket-backend-proof.js";
import type { RecordedCodexServer } from "../../hire/host-journal.js";
import { serverArgv, type CodexPaneSpec } from "./pane-plan.js";
import { HIRE_ENV } from "../../hire/pane-opener.js";

const SOCKET_WAIT_MS = 20_000;
const KILL_AFTER_MS = 5_000;

function tail(path: string): string {
  try {
    return readFileSync(path, "utf8").split("\n").filter(Boolean).slice(-8).join("\n");
  } catch {
    return "";
  }
}

/** Starts the server and waits for SOCK; throws (with nothing left running) when it does not listen. */
export async function startCodexServer(o: {
  spec: CodexPaneSpec;
  hireId: string;
  cwd: string;
  env: Record<string, string>;
  proofs: ProofProvider;
}): Promise<RecordedCodexServer> {
  const { spec } = o;
  rmSync(spec.socketPath, { force: true });
  const log = openSync(spec.serverLog, "a", 0o600);
  // The agent's own environment as the base (as a tmux pane has the owner's), minus the agent's CLANKIE_* settings:
  // the model's shell commands run under this server for the worker's whole life.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CLANKIE_")));
  const child = spawn(spec.bin, serverArgv(spec), {
    cwd: o.cwd,
    env: { ...base, ...o.env, [HIRE_ENV]: o.hireId },
    stdio: ["ignore", "ignore", log],
    detached: true,
  });
  closeSync(log);
  child.unref();
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const fail = async (why: string): Promise<never> => {
    if (!exited() && child.pid !== undefined) killGroup(child.pid, "SIGKILL");
    throw new Error(`codex app-server ${why}:\n${tail(spec.serverLog)}`);
  };
  if (child.pid === undefined) return fail("could not be started");
  const deadline = Date.now() + SOCKET_WAIT_MS;
  while (!existsSync(spec.socketPath) && !exited() && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  if (exited()) return fail(`exited (${child.signalCode ?? child.exitCode}) before it listened`);
  if (!existsSync(spec.socketPath))
    return fail(`did not listen on ${spec.socketPath} within ${SOCKET_WAIT_MS / 1000} s`);
  // The binary may be a wrapper (npm's node shim): the server is the member of its group that listens on SOCK.
  for (let i = 0; i < 40 && !exited(); i++) {
    const listener = await listenerIn(o.proofs, child.pid, spec.socketPath);
    if (listener)
      return { pid: listener.pid, startTime: listener.startTime, socketPath: spec.socketPath, pgid: child.pid };
    await new Promise((r) => setTimeout(r, 50));
  }
  return fail(`started, but no process of its group was seen listening on ${spec.socketPath}`);
}

async function listenerIn(proofs: ProofProvider, pgid: number, socketPath: string): Promise<ProcessEntry | undefined> {
  const members = await proofs.groupMembers(pgid);
  if (!members.known) return undefined;
  const want = boundPathOf(socketPath);
  for (const m of members.value) {
    const l = await proofs.listeners(m);
    if (l.known && l.value.listeners.some((x) => x.transport === "unix" && x.path === want)) return m;
  }
  return undefined;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // gone already
  }
}

/** The recorded lifetime is still alive (pid reuse is another lifetime); unknown counts as alive. */
export async function isRecordedAlive(proofs: ProofProvider, s: RecordedCodexServer): Promise<boolean> {
  const f = await proofs.identify(s.pid);
  if (f.known) return f.value.startTime === s.startTime;
  return f.reason !== "pid_gone";
}

/**
 * Stops exactly the recorded lifetime and its group (SIGTERM, then SIGKILL): the group is
 * signalled only while the kernel still shows that lifetime in it.
 */
export async function stopCodexServer(proofs: ProofProvider, s: RecordedCodexServer): Promise<boolean> {
  const group = s.pgid ?? s.pid;
  const same = async () => {
    const f = await proofs.identify(s.pid);
    return f.known && f.value.startTime === s.startTime && f.value.pgid === group;
  };
  if (!(await same())) return true;
  killGroup(group, "SIGTERM");
  const deadline = Date.now() + KILL_AFTER_MS;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    if (!(await same())) break;
  }
  if (await same()) killGroup(group, "SIGKILL");
  // Members left behind (MCP children slow to exit) share the group id, which the kernel keeps reserved while any lives.
  const left = await proofs.groupMembers(group);
  if (left.known && left.value.length > 0) killGroup(group, "SIGKILL");
  rmSync(s.socketPath, { force: true });
  for (let i = 0; i < 50 && (await same()); i++) await new Promise((r) => setTimeout(r, 100));
  return !(await same());
}
