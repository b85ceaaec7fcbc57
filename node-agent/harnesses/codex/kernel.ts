/**
 * Kernel proofs for a Codex seat. The backend is the process lifetime the kernel showed at
 * the other end of the agent's own connection when the seat was discovered; before each
 * write it is proven again on the connection the write will use:
 * - over TCP (a TUI started with `--remote ws://127.0.0.1:PORT`, joined to a dedicated
 *   `codex app-server --listen` in the same pane): the pane proof (pane-proof.ts) — the pane,
 *   both lifetimes, their shared foreground ancestry, creation order (backend first), one
 *   private home, the backend's loopback listener, the connection's other end;
 * - over the shared daemon's unix socket: the socket-backend proof (socket-backend-proof.ts)
 *   — the connection's other end, the TUI's own connection into the same daemon, the
 *   daemon's listener on that path, one private home, both lifetimes.
 * Anything it cannot establish is `unknown`, which refuses the write. Where the OS cannot
 * name a unix socket's peer at all (`unsupported`: macOS, Windows), a daemon seat keeps the
 * adapter's own proofs (ADR 0007).
 */
import type { PaneHost } from "../../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import { provePane } from "../../proofs/pane-proof.js";
import { boundPathOf, proveSocketBackend } from "../../proofs/socket-backend-proof.js";
import type { ProcessIdentity, ProofProvider } from "../../proofs/provider.js";
import type { SeatRecord } from "../adapter.js";
import { unixSocketPathOf, type CodexConnection } from "./connection.js";

export interface CodexKernelDeps {
  provider: ProofProvider;
  host: PaneHost | undefined;
  clock: MonotonicClock;
}

/** The backend facts a TCP Codex seat records at discovery (SeatRecord.control). */
export interface CodexBackendFacts {
  endpoint?: string | undefined;
  tuiPid?: number | undefined;
  tuiStartTime?: number | undefined;
  backendPid?: number | undefined;
  backendStartTime?: number | undefined;
  codexHome: string;
}

/** The one process lifetime holding the other end of the agent's connection, if the kernel shows exactly one. */
export async function backendOfConnection(
  provider: ProofProvider,
  connection: CodexConnection,
  endpoint: string,
): Promise<ProcessIdentity | undefined> {
  const tuple = connection.tcpTuple;
  const fd = connection.unixSocketFd;
  const socketPath = unixSocketPathOf(endpoint);
  let peers: ProcessIdentity[];
  if (tuple) {
    const f = await provider.connectionPeer(tuple);
    if (!f.known || !f.value.isAgentEnd || !f.value.isComplete) return undefined;
    peers = f.value.peers;
  } else if (fd !== undefined && socketPath) {
    const f = await provider.unixConnectionPeer(fd);
    if (!f.known || !f.value.isAgentEnd || !f.value.isComplete || f.value.peerPath !== boundPathOf(socketPath))
      return undefined;
    peers = f.value.peers;
  } else return undefined;
  if (peers.length !== 1) return undefined;
  const { pid, startTime } = peers[0]!;
  return { pid, startTime };
}

/** The pane proof for this seat over `connection` (the one the write will use), or one `unknown` saying what is missing. */
export async function codexKernelProofs(
  deps: CodexKernelDeps,
  seat: SeatRecord,
  ctl: CodexBackendFacts,
  connection: CodexConnection,
): Promise<ProofFact[]> {
  const missing = (detail: string): ProofFact[] => [
    { kind: "pane_proof", outcome: "unknown", detail, completedAtMs: deps.clock.nowMs() },
  ];
  if (!deps.host || !seat.pane) return missing("unsupported: the seat has no pane host to prove its pane with");
  if (ctl.tuiPid === undefined || ctl.tuiStartTime === undefined)
    return missing("race: the TUI's process lifetime was not recorded at discovery");
  const socketPath = unixSocketPathOf(ctl.endpoint ?? "");
  const fd = connection.unixSocketFd;
  if (socketPath && (ctl.backendPid === undefined || ctl.backendStartTime === undefined || fd === undefined)) {
    // An OS that cannot name a unix socket's peer keeps the adapter's own proofs (ADR 0007).
    const probe = fd === undefined ? undefined : await deps.provider.unixConnectionPeer(fd);
    if (probe && !probe.known && probe.reason === "unsupported") return [];
  }
  if (ctl.backendPid === undefined || ctl.backendStartTime === undefined) {
    return missing(
      "race: no single app-server process was found at the other end of the agent's connection at discovery",
    );
  }
  if (socketPath) {
    if (fd === undefined) return missing("race: the agent's connection to the app-server is closed");
    return proveSocketBackend(
      { provider: deps.provider, clock: deps.clock },
      {
        tui: { pid: ctl.tuiPid, startTime: ctl.tuiStartTime },
        backend: { pid: ctl.backendPid, startTime: ctl.backendStartTime },
        harness: "codex",
        home: ctl.codexHome,
        socketPath,
        agentFd: fd,
      },
    );
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
