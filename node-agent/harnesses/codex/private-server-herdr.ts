/**
 * The Herdr form of `private_app_server` (ADR 0040 addendum "Herdr"): Herdr's agent.start runs
 * only the kind's binary, so a Herdr Codex hire's private app-server is started by the agent
 * itself (node-agent/harnesses/codex/herdr-server.ts) and is not in the pane's tree. The proof is
 * then: the seat's endpoint is the socket the agent started that server on; the process at the
 * other end of the agent's connection (recorded at discovery, re-proven on every write by the
 * socket-backend proof) is exactly the lifetime (pid + start time) the hire's host journal entry
 * recorded, never anything the worker says; it still listens on that socket by its own argv; and
 * the kernel shows the pane's TUI as its only client (besides this agent), so every thread it
 * hosts is that TUI's. Anything else refutes: the seat gets no control.
 */
import { posix } from "node:path";
import type { RecordedCodexServer } from "../../hire/host-journal.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import { boundPathOf } from "../../proofs/socket-backend-proof.js";
import { describeIdentity, sameIdentity, type ProcessIdentity, type ProofProvider } from "../../proofs/provider.js";
import { unixSocketPathOf } from "./connection.js";
import { appServerArgs, listenPathOf } from "./private-server.js";
import type { HireLookup } from "./ownership.js";

export interface AgentServerFacts {
  endpoint?: string | undefined;
  tuiPid?: number | undefined;
  tuiStartTime?: number | undefined;
  backendPid?: number | undefined;
  backendStartTime?: number | undefined;
}

/** The server the agent recorded for the hire that owns a seat, if it started one (never the worker's word). */
export function recordedServerOf(
  hires: HireLookup | undefined,
  owner: string | undefined,
): RecordedCodexServer | undefined {
  try {
    return owner ? hires?.launched(owner)?.codexServer : undefined;
  } catch {
    return undefined;
  }
}

const samePath = (a: string, b: string) => posix.resolve(boundPathOf(a)) === posix.resolve(boundPathOf(b));

/** The facts the Herdr form judges, already read. `clients`: who holds the other ends of the server's unix connections. */
export interface AgentServerFactsRead {
  path: string;
  recorded: RecordedCodexServer;
  tui: ProcessIdentity;
  backend: ProcessIdentity;
  argv: readonly string[];
  clients: readonly ProcessIdentity[];
  agentPid: number;
}

/** The decision (pure: unit-tested). */
export function judgeAgentServer(f: AgentServerFactsRead): { outcome: "proven" | "refuted"; detail: string } {
  const no = (detail: string) => ({ outcome: "refuted" as const, detail });
  const server: ProcessIdentity = { pid: f.recorded.pid, startTime: f.recorded.startTime };
  if (f.recorded.stoppedAtMs !== undefined)
    return no(`the app-server the agent started for this hire (pid ${f.recorded.pid}) was stopped`);
  if (!samePath(f.path, f.recorded.socketPath))
    return no(
      `the seat's endpoint ${f.path} is not the socket ${f.recorded.socketPath} the agent started this hire's app-server on`,
    );
  if (!sameIdentity(f.backend, server))
    return no(
      `the agent's connection ends in ${describeIdentity(f.backend)}, not the app-server ${describeIdentity(server)} the agent started for this hire`,
    );
  const args = appServerArgs(f.argv);
  if (!args) return no(`the recorded process ${describeIdentity(server)} is not a codex app-server`);
  const listens = listenPathOf(args);
  if (!listens || !samePath(listens, f.path))
    return no(
      `the recorded app-server listens by its flags on ${listens ?? "the account daemon's default socket"}, not ${f.path}`,
    );
  const clients = new Map<string, ProcessIdentity>();
  // The server's own socket pairs and this agent's connections are not clients.
  for (const p of f.clients)
    if (!sameIdentity(p, server) && p.pid !== f.agentPid) clients.set(`${p.pid}:${p.startTime}`, p);
  const others = [...clients.values()].filter((p) => !sameIdentity(p, f.tui));
  if (others.length > 0)
    return no(
      `the hire's app-server has other clients than the pane's TUI: ${others.map(describeIdentity).join(", ")}`,
    );
  if (clients.size === 0)
    return no(`the pane's TUI ${describeIdentity(f.tui)} holds no connection to the hire's app-server`);
  return {
    outcome: "proven",
    detail: `the app-server ${describeIdentity(server)} the agent started for this hire listens on ${f.path}; the pane's TUI ${describeIdentity(f.tui)} is its only client`,
  };
}

/** Reads the facts from the kernel (through the ProofProvider) and judges them. */
export async function agentServerProof(
  deps: { provider: ProofProvider; clock: MonotonicClock; agentPid?: number },
  ctl: AgentServerFacts,
  recorded: RecordedCodexServer,
): Promise<ProofFact> {
  const fact = (outcome: ProofFact["outcome"], detail: string): ProofFact => ({
    kind: "private_app_server",
    outcome,
    detail,
    completedAtMs: deps.clock.nowMs(),
  });
  const path = unixSocketPathOf(ctl.endpoint ?? "");
  if (!path) return fact("refuted", `the seat's endpoint ${ctl.endpoint ?? "(none)"} is not a private unix socket`);
  if (ctl.tuiPid === undefined || ctl.tuiStartTime === undefined)
    return fact("unknown", "race: the TUI's process lifetime was not recorded at discovery");
  if (ctl.backendPid === undefined || ctl.backendStartTime === undefined)
    return fact("unknown", "race: no single app-server process was found at the other end of the agent's connection");
  const server: ProcessIdentity = { pid: recorded.pid, startTime: recorded.startTime };
  const [argv, conns] = await Promise.all([deps.provider.commandLine(server), deps.provider.unixConnections(server)]);
  for (const f of [argv, conns])
    if (!f.known) return fact(f.reason === "pid_gone" ? "refuted" : "unknown", `${f.reason}: ${f.detail}`);
  if (!argv.known || !conns.known) throw new Error("unreachable");
  const judged = judgeAgentServer({
    path,
    recorded,
    tui: { pid: ctl.tuiPid, startTime: ctl.tuiStartTime },
    backend: { pid: ctl.backendPid, startTime: ctl.backendStartTime },
    argv: argv.value.argv,
    clients: conns.value.flatMap((c) => c.peers),
    agentPid: deps.agentPid ?? process.pid,
  });
  return fact(judged.outcome, judged.detail);
}
