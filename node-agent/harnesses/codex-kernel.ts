/**
 * Kernel proofs for a Codex seat whose control endpoint is TCP: a TUI started with
 * `--remote ws://127.0.0.1:PORT`, joined to a dedicated `codex app-server --listen` in the
 * same pane. The backend is the process lifetime the kernel showed at the other end of the
 * agent's own connection when the seat was discovered; before each write the pane proof
 * (pane-proof.ts) re-proves the pane, both lifetimes, their shared foreground ancestry, the
 * creation order (backend first), one private home, the backend's loopback listener, and
 * that the connection the write will use ends in that backend. Anything it cannot establish
 * is `unknown`, which refuses the write. Unix-socket endpoints get no kernel proofs yet
 * (ADR 0007: their peer is not provable).
 */
import type { PaneHost } from "../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "../proofs/proof.js";
import { provePane } from "../proofs/pane-proof.js";
import type { ProcessIdentity, ProofProvider } from "../proofs/provider.js";
import type { SeatRecord } from "./adapter.js";
import type { CodexConnection } from "./codex-connection.js";

export interface CodexKernelDeps {
  provider: ProofProvider;
  host: PaneHost | undefined;
  clock: MonotonicClock;
}

/** The backend facts a TCP Codex seat records at discovery (SeatRecord.control). */
export interface CodexBackendFacts {
  tuiPid?: number | undefined;
  tuiStartTime?: number | undefined;
  backendPid?: number | undefined;
  backendStartTime?: number | undefined;
  codexHome: string;
}

/** `ws://` or `wss://`: an endpoint reached over TCP, whose peer the kernel can name. */
export function isTcpEndpoint(endpoint: string | undefined): boolean {
  return endpoint !== undefined && /^wss?:\/\//i.test(endpoint);
}

/** The one process lifetime holding the other end of the agent's connection, if the kernel shows exactly one. */
export async function backendOfConnection(provider: ProofProvider, connection: CodexConnection): Promise<ProcessIdentity | undefined> {
  const tuple = connection.tcpTuple;
  if (!tuple) return undefined;
  const f = await provider.connectionPeer(tuple);
  if (!f.known || !f.value.isAgentEnd || !f.value.isComplete || f.value.peers.length !== 1) return undefined;
  const { pid, startTime } = f.value.peers[0]!;
  return { pid, startTime };
}

/** The pane proof for this seat over `connection` (the one the write will use), or one `unknown` saying what is missing. */
export async function codexKernelProofs(deps: CodexKernelDeps, seat: SeatRecord, ctl: CodexBackendFacts, connection: CodexConnection): Promise<ProofFact[]> {
  const missing = (detail: string): ProofFact[] => [{ kind: "pane_proof", outcome: "unknown", detail, completedAtMs: deps.clock.nowMs() }];
  if (!deps.host || !seat.pane) return missing("unsupported: the seat has no pane host to prove its pane with");
  if (ctl.tuiPid === undefined || ctl.tuiStartTime === undefined) return missing("race: the TUI's process lifetime was not recorded at discovery");
  if (ctl.backendPid === undefined || ctl.backendStartTime === undefined) {
    return missing("race: no single app-server process was found at the other end of the agent's connection at discovery");
  }
  const tuple = connection.tcpTuple;
  if (!tuple) return missing("race: the agent's connection to the app-server has no TCP tuple (closed)");
  const { paneId, terminalId, sessionId } = seat.pane;
  return provePane(
    { host: deps.host, provider: deps.provider, clock: deps.clock },
    {
      pane: { paneId, terminalId, sessionId },
      tui: { pid: ctl.tuiPid, startTime: ctl.tuiStartTime },
      backend: { pid: ctl.backendPid, startTime: ctl.backendStartTime },
      // The dedicated app-server must listen before a `--remote` TUI can join it.
      order: "backend_first",
      harness: "codex",
      home: ctl.codexHome,
      connection: tuple,
    },
  );
}
