/**
 * What a Codex inspect proves beside the TUI process, and what it then offers: the pane still runs
 * that TUI, the app-server serves the pane's CODEX_HOME and holds the pane's thread, the kernel
 * proofs of the connection the write will use (kernel.ts), and a `--remote unix://` TUI's own
 * private server (private-server*.ts). Capabilities come only from that live control (rules 38, 47).
 */
import { SeatStatus } from "../../../shared/verdicts.js";
import type { PaneHost } from "../../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type { ProofProvider } from "../../proofs/provider.js";
import type { InputCapabilities, SeatRecord } from "../adapter.js";
import { unixSocketPathOf, type CodexConnection } from "./connection.js";
import type { CodexControl } from "./control.js";
import { codexKernelProofs } from "./kernel.js";
import type { HireLookup } from "./ownership.js";
import { privateServerProof } from "./private-server.js";
import { agentServerProof, recordedServerOf } from "./private-server-herdr.js";
import { observeThread, type ThreadObservation } from "./thread.js";
import { launchInheritanceProof, type WindowsControlDeps } from "./windows.js";
import type { ProvenThread } from "./write.js";

export const NO_CAPABILITIES: InputCapabilities = { deliveryModes: [], interrupt: false, nextTurnOnly: false };
/** Rule 47: an owned Codex seat whose app-server control is attached offers both modes and a stop. */
export const CODEX_LIVE_CAPABILITIES: InputCapabilities = {
  deliveryModes: ["steer", "queue"],
  interrupt: true,
  nextTurnOnly: false,
};
/** Rule 47: an unowned Codex seat queues, and steers because its endpoint was reached and proven; no stop. */
export const CODEX_UNOWNED_CAPABILITIES: InputCapabilities = {
  deliveryModes: ["steer", "queue"],
  interrupt: false,
  nextTurnOnly: false,
};
/** Rule 38: the `codex queue` CLI on a proven default home queues, and nothing else. */
export const CODEX_CLI_QUEUE_CAPABILITIES: InputCapabilities = {
  deliveryModes: ["queue"],
  interrupt: false,
  nextTurnOnly: true,
};

/** The open connection to an app-server, or why there is none. */
export type Connected = { ok: true; connection: CodexConnection; codexHome: string } | { ok: false; detail: string };

/** What the proofs read: the clock that stamps them, the pane host, the kernel facts, the hire journal. */
export interface InspectionDeps {
  clock: MonotonicClock;
  paneHost?: PaneHost | undefined;
  /** Kernel facts (select.ts); with them, every write is preceded by the kernel proofs of kernel.ts. */
  proofs?: ProofProvider | undefined;
  hires?: HireLookup | undefined;
  win: WindowsControlDeps;
  connect(endpoint: string): Promise<Connected>;
}

export function stamp(clock: MonotonicClock, kind: string, outcome: ProofFact["outcome"], detail: string): ProofFact {
  return { kind, outcome, detail, completedAtMs: clock.nowMs() };
}

export function statusOf(obs: ThreadObservation): SeatStatus {
  if (obs.status === "active")
    return obs.activeFlags.some((f) => /waitingOn/i.test(f)) ? SeatStatus.Blocked : SeatStatus.Working;
  if (obs.status === "idle") return SeatStatus.Idle;
  if (obs.status === "notLoaded") return SeatStatus.Offline;
  return SeatStatus.Unknown;
}

/** The pane still runs this TUI in its foreground (when the seat is in a pane and a host is known). */
export async function paneProof(
  d: InspectionDeps,
  seat: SeatRecord,
  ctl: CodexControl,
): Promise<ProofFact | undefined> {
  if (!seat.pane || !d.paneHost || ctl.tuiPid === undefined) return undefined;
  try {
    const info = await d.paneHost.processInfo(seat.pane.paneId);
    const inPane = info.foregroundProcesses.some((p) => p.pid === ctl.tuiPid);
    return stamp(
      d.clock,
      "pane_occupant",
      inPane ? "proven" : "refuted",
      inPane
        ? `pane ${seat.pane.paneId} runs pid ${ctl.tuiPid} in its foreground`
        : `pane ${seat.pane.paneId} no longer runs pid ${ctl.tuiPid}`,
    );
  } catch (e) {
    return stamp(d.clock, "pane_occupant", "unknown", `pane host: ${(e as Error).message}`);
  }
}

/** The app-server for this pane's home, and the pane's thread in it, observed now. */
export async function controlProofs(
  d: InspectionDeps,
  seat: SeatRecord,
  ctl: CodexControl,
): Promise<{ proofs: ProofFact[]; status: SeatStatus; proven?: ProvenThread }> {
  // Rule 38: --no-daemon launches cannot be steered or queued: no modes, and write refuses.
  if (!ctl.endpoint) return { proofs: [], status: SeatStatus.Unknown };
  // Windows: only a dedicated app-server is ever connected to (rule 38).
  if (ctl.windows && ctl.windows.kind !== "private_app_server") return { proofs: [], status: SeatStatus.Unknown };
  const c = await d.connect(ctl.endpoint);
  if (!c.ok)
    return {
      proofs: [stamp(d.clock, "codex_control", "refuted", `app-server ${ctl.endpoint} unreachable: ${c.detail}`)],
      status: SeatStatus.Offline,
    };
  const sameHome = c.codexHome === ctl.codexHome;
  // The home is a property of the open connection: stamped when the last read on it finished.
  const homeProof = () =>
    stamp(
      d.clock,
      "codex_home",
      sameHome ? "proven" : "refuted",
      sameHome
        ? `app-server serves CODEX_HOME ${ctl.codexHome}`
        : `app-server serves ${c.codexHome}, the pane uses ${ctl.codexHome}`,
    );
  if (!sameHome) return { proofs: [homeProof()], status: SeatStatus.Unknown };
  if (!ctl.threadId) {
    return {
      proofs: [
        homeProof(),
        stamp(
          d.clock,
          "codex_thread",
          "unknown",
          "the pane's thread is not known (none or several candidates at discovery)",
        ),
      ],
      status: SeatStatus.Unknown,
    };
  }
  // The kernel proofs run beside the thread read, on the connection the write will use.
  const provider = d.proofs;
  const kernelRun = provider ? kernelProofs(d, provider, seat, ctl, c.connection) : Promise.resolve([]);
  const [obs, kernel] = await Promise.all([observeThread(c.connection, ctl.threadId), kernelRun]);
  if (!obs.ok) {
    const definite = obs.reason === "thread_not_loaded" || obs.reason === "thread_ephemeral";
    return {
      proofs: [homeProof(), stamp(d.clock, "codex_thread", definite ? "refuted" : "unknown", obs.detail), ...kernel],
      status: definite ? SeatStatus.Offline : SeatStatus.Unknown,
    };
  }
  const o = obs.value;
  const thread = stamp(
    d.clock,
    "codex_thread",
    "proven",
    `thread ${o.threadId} ${o.status}${o.activeTurnId ? ` (turn ${o.activeTurnId})` : ""}`,
  );
  // A refuted or unknown kernel proof leaves the seat without control: the write and stop refuse.
  if (kernel.some((p) => p.outcome !== "proven"))
    return { proofs: [homeProof(), thread, ...kernel], status: SeatStatus.Unknown };
  return {
    proofs: [homeProof(), thread, ...kernel],
    status: statusOf(o),
    proven: { connection: c.connection, observation: o },
  };
}

/** The kernel proofs, and on Windows that the dedicated app-server inherits the TUI's launch. */
async function kernelProofs(
  d: InspectionDeps,
  provider: ProofProvider,
  seat: SeatRecord,
  ctl: CodexControl,
  connection: CodexConnection,
): Promise<ProofFact[]> {
  const deps = { provider, host: d.paneHost, clock: d.clock };
  const inherits =
    ctl.windows?.kind === "private_app_server" && ctl.tuiPid !== undefined && ctl.backendPid !== undefined
      ? launchInheritanceProof(
          d.win,
          { pid: ctl.tuiPid, startTime: ctl.tuiStartTime! },
          { pid: ctl.backendPid, startTime: ctl.backendStartTime! },
        )
      : undefined;
  const [kernel, inherited] = await Promise.all([codexKernelProofs(deps, seat, ctl, connection), inherits]);
  return inherited ? [...kernel, inherited] : kernel;
}

/** A `--remote unix://` TUI: whether its backend is its own app-server in its pane (codex-private-server.ts). */
export async function privateServer(
  d: InspectionDeps,
  seat: SeatRecord,
  ctl: CodexControl,
  owning: Promise<string | undefined>,
): Promise<ProofFact | undefined> {
  if (ctl.launch !== "remote" || !d.proofs || !unixSocketPathOf(ctl.endpoint ?? "")) return undefined;
  const recorded = recordedServerOf(d.hires, await owning);
  const deps = { provider: d.proofs, host: d.paneHost, clock: d.clock };
  return recorded ? agentServerProof(deps, ctl, recorded) : privateServerProof(deps, seat, ctl);
}
