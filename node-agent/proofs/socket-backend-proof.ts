/**
 * The proof for a backend the pane's TUI shares over a unix socket (Codex's daemon at
 * `$CODEX_HOME/app-server-control/app-server-control.sock`). The daemon is not the pane's
 * child, so the pane proof's ancestry and creation order do not apply; the kernel instead
 * shows that both recorded lifetimes still run, the daemon listens on the very path the
 * agent connected to, the agent's connection ends in the daemon and nowhere else, the TUI
 * itself holds a connection into the daemon on that path, and both use the pane's private
 * home. The pane host's view of the TUI is proven beside it (the adapter's pane_occupant).
 */
import { realpathSync } from "node:fs";
import type { MonotonicClock, ProofFact } from "./proof.js";
import {
  describeIdentity,
  sameHome,
  sameIdentity,
  type Fact,
  type HomeHarness,
  type ProcessIdentity,
  type ProofProvider,
} from "./provider.js";

export interface SocketBackendProofRequest {
  tui: ProcessIdentity;
  backend: ProcessIdentity;
  harness: HomeHarness;
  home: string;
  socketPath: string;
  /** The agent's own connection to the backend (its descriptor in the agent). */
  agentFd: number;
}

export const SOCKET_BACKEND_PROOF_KINDS = [
  "connection_socket",
  "tui_connection",
  "backend_listener",
  "private_home",
  "process_identity",
] as const;

type Stamped = { completedAtMs: number };

function proofOf(kind: string, outcome: ProofFact["outcome"], detail: string, ...stamps: Stamped[]): ProofFact {
  return { kind, outcome, detail, completedAtMs: Math.max(...stamps.map((s) => s.completedAtMs)) };
}

function unknownOf(kind: string, f: Fact<unknown> & { known: false }): ProofFact {
  return proofOf(kind, f.reason === "pid_gone" ? "refuted" : "unknown", `${f.reason}: ${f.detail}`, f);
}

/**
 * The path the kernel shows for a socket reached at `socketPath`: a socket path longer than
 * sun_path allows is bound elsewhere and linked (Codex binds under /tmp/codex-daemon-<uid>/),
 * so the link is resolved now, at proof time, the way a new connection would resolve it.
 */
export function boundPathOf(socketPath: string): string {
  try {
    return realpathSync(socketPath);
  } catch {
    return socketPath;
  }
}

const onlyThe = (peers: ProcessIdentity[], backend: ProcessIdentity) =>
  peers.length === 1 && sameIdentity(peers[0]!, backend);

/** Every proof, costliest first (each ages from its own completion; see pane-proof.ts). */
export async function proveSocketBackend(
  deps: { provider: ProofProvider; clock: MonotonicClock },
  req: SocketBackendProofRequest,
): Promise<ProofFact[]> {
  const { provider } = deps;
  const bound = boundPathOf(req.socketPath);
  const mine = await provider.unixConnectionPeer(req.agentFd);
  const connection = !mine.known
    ? unknownOf("connection_socket", mine)
    : !mine.value.isAgentEnd
      ? proofOf(
          "connection_socket",
          "refuted",
          `descriptor ${req.agentFd} is no longer the agent's open connection`,
          mine,
        )
      : mine.value.peerPath !== bound
        ? proofOf(
            "connection_socket",
            "refuted",
            `the agent's connection was accepted on ${mine.value.peerPath || "an unnamed socket"}, not ${req.socketPath}`,
            mine,
          )
        : onlyThe(mine.value.peers, req.backend)
          ? mine.value.isComplete
            ? proofOf(
                "connection_socket",
                "proven",
                `the agent's connection on ${req.socketPath} ends in ${describeIdentity(req.backend)} and nowhere else`,
                mine,
              )
            : proofOf(
                "connection_socket",
                "unknown",
                "permission: not every process could be inspected to show the backend is the only holder",
                mine,
              )
          : proofOf(
              "connection_socket",
              "refuted",
              `the other end is held by ${mine.value.peers.map(describeIdentity).join(", ") || "no live process"}, not ${describeIdentity(req.backend)}`,
              mine,
            );

  const tuiSockets = await provider.unixConnections(req.tui);
  const tui = !tuiSockets.known
    ? unknownOf("tui_connection", tuiSockets)
    : tuiSockets.value.some((c) => c.peerPath === bound && onlyThe(c.peers, req.backend))
      ? proofOf(
          "tui_connection",
          "proven",
          `the TUI holds a connection on ${req.socketPath} into ${describeIdentity(req.backend)}`,
          tuiSockets,
        )
      : proofOf(
          "tui_connection",
          "refuted",
          `the TUI holds no connection on ${req.socketPath} into ${describeIdentity(req.backend)}`,
          tuiSockets,
        );

  const listeners = await provider.listeners(req.backend);
  const listener = !listeners.known
    ? unknownOf("backend_listener", listeners)
    : listeners.value.listeners.some((l) => l.transport === "unix" && l.path === bound)
      ? proofOf("backend_listener", "proven", `the backend listens on ${req.socketPath}`, listeners)
      : proofOf("backend_listener", "refuted", `the backend does not listen on ${req.socketPath}`, listeners);

  const [tuiHome, backendHome] = await Promise.all([
    provider.home(req.tui, req.harness),
    provider.home(req.backend, req.harness),
  ]);
  let home: ProofFact;
  if (!tuiHome.known) home = unknownOf("private_home", tuiHome);
  else if (!backendHome.known) home = unknownOf("private_home", backendHome);
  else if (
    !sameHome(tuiHome.value.path, req.home, provider.platform) ||
    !sameHome(backendHome.value.path, req.home, provider.platform)
  ) {
    home = proofOf(
      "private_home",
      "refuted",
      `expected ${req.home}; the TUI uses ${tuiHome.value.path}, the backend ${backendHome.value.path}`,
      tuiHome,
      backendHome,
    );
  } else
    home = proofOf(
      "private_home",
      "proven",
      `TUI and backend both use ${req.home} (${tuiHome.value.variable})`,
      tuiHome,
      backendHome,
    );

  const [tuiNow, backendNow] = await Promise.all([provider.identify(req.tui.pid), provider.identify(req.backend.pid)]);
  let identity: ProofFact;
  if (!tuiNow.known) identity = unknownOf("process_identity", tuiNow);
  else if (!backendNow.known) identity = unknownOf("process_identity", backendNow);
  else if (!sameIdentity(tuiNow.value, req.tui) || !sameIdentity(backendNow.value, req.backend)) {
    identity = proofOf(
      "process_identity",
      "refuted",
      "a recorded pid now belongs to another process (pid reused)",
      tuiNow,
      backendNow,
    );
  } else
    identity = proofOf(
      "process_identity",
      "proven",
      `TUI ${describeIdentity(req.tui)}, backend ${describeIdentity(req.backend)}`,
      tuiNow,
      backendNow,
    );

  return [connection, tui, listener, home, identity];
}
