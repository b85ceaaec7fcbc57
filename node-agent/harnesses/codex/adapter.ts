/**
 * Codex seats: a Codex TUI in a pane, controlled through the app-server it is attached to
 * (the shared daemon under its own CODEX_HOME, or the app-server it joined with --remote).
 * inspect proves the occupant process, the pane, the server's home and the pane's thread,
 * and keeps that connection; write goes through the same connection (codex-write.ts).
 * Capabilities come only from that live control (inventory rules 36, 45-47): an owned seat
 * (this agent's hire launched the TUI, codex-ownership.ts) gets [steer, queue] + interrupt;
 * an unowned one whose endpoint is reachable and proven gets [steer, queue] and no interrupt;
 * without live control (`--no-daemon`, unreachable), none. Queue is always its own native
 * route (`thread/queue/add`), never a steer that fell back.
 * A TCP endpoint (`--remote ws://…`) also carries the kernel pane proof (codex-kernel.ts); an
 * owned seat on `--remote unix://` (a hire's private app-server) also carries
 * `private_app_server`: its backend is its pane's own server, or its Herdr hire's (codex-private-server*.ts).
 */
import { contentFingerprint } from "../../../shared/fingerprint.js";
import { AgentResult, SeatKind, SeatStatus } from "../../../shared/verdicts.js";
import type { PaneHost, PaneInfo, PaneProcessInfo } from "../../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type { ProofProvider } from "../../proofs/provider.js";
import { selectProofProvider } from "../../proofs/select.js";
import type {
  HarnessAdapter,
  InputCapabilities,
  NativeWrite,
  NativeWriteResult,
  SeatRecord,
  SeatSnapshot,
  SessionRead,
  StopResult,
} from "../adapter.js";
import { CodexConnection, unixSocketPathOf } from "./connection.js";
import { privateServerProof } from "./private-server.js";
import { agentServerProof, recordedServerOf } from "./private-server-herdr.js";
import { backendOfConnection, codexKernelProofs } from "./kernel.js";
import { findCodexTui, isSameProcessAlive, type CodexLaunch } from "./process.js";
import { CodexReadiness } from "./readiness.js";
import { CodexWriteTurns } from "./write-turns.js";
import { listClientMessages, listQueue, observeThread, pickPaneThread, type ThreadObservation } from "./thread.js";
import { writeToThread, type CodexWriteOptions, type ProvenThread } from "./write.js";
import {
  beforeDispatch,
  defaultHomeProof,
  launchInheritanceProof,
  queueViaCli,
  windowsControlPlan,
  type WindowsControlDeps,
  type WindowsControlPlan,
} from "./windows.js";
import { runCommand, type CommandRunner } from "../../proofs/run-command.js";
import { codexOwner, type HireLookup } from "./ownership.js";
import { codexControlOf, type CodexControl } from "./control.js";
import { homedir } from "node:os";

export { codexControlOf, type CodexControl } from "./control.js";

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

export interface CodexAdapterOptions {
  clock: MonotonicClock;
  /** Re-proves that the seat's pane still runs the same TUI process. */
  paneHost?: PaneHost | undefined;
  /** Kernel facts (select.ts); with it, every write is preceded by the kernel proofs of codex-kernel.ts. */
  proofs?: ProofProvider | undefined;
  confirmTimeoutMs?: number;
  confirmPollMs?: number;
  callTimeoutMs?: number;
  /** Windows: the runner for the `codex queue` CLI, and the profile whose default home it uses (tests inject both). */
  windows?: { run?: CommandRunner; agentProfile?: string } | undefined;
  /** This agent's host journal of hires: a TUI one of them launched in its pane is owned. */
  hires?: HireLookup | undefined;
}

/** Seat names derive from the pane: `codex-<pane id>` with only name-safe characters (tmux %3 → codex-3). */
export function codexSeatName(paneId: string): string {
  return `codex-${paneId.replace(/[^A-Za-z0-9._-]/g, "")}`.slice(0, 64);
}

function statusOf(obs: ThreadObservation): SeatStatus {
  if (obs.status === "active")
    return obs.activeFlags.some((f) => /waitingOn/i.test(f)) ? SeatStatus.Blocked : SeatStatus.Working;
  if (obs.status === "idle") return SeatStatus.Idle;
  if (obs.status === "notLoaded") return SeatStatus.Offline;
  return SeatStatus.Unknown;
}

export class CodexAdapter implements HarnessAdapter {
  readonly kind = SeatKind.Codex;
  private readonly connections = new Map<string, { connection: CodexConnection; codexHome: string }>();
  /** What the last inspect proved, per seat: the write may use only this. */
  private readonly proven = new Map<string, ProvenThread & { occupantId: string }>();
  private readonly writeOptions: CodexWriteOptions;
  /** The app-server's own answer on whether a turn could run, per occupant (issue 35). */
  private readonly readiness = new CodexReadiness();
  /** Rule 39: each write's turn, for the unattended release. */
  private readonly writeTurns = new CodexWriteTurns();
  /** Process facts for discovery and liveness: the kernel proofs' provider, or this OS's. */
  private readonly facts: ProofProvider;
  /** Windows CLI-queue seats whose last inspect proved the default home, by seat name → occupant. */
  private readonly provenCli = new Map<string, string>();
  private readonly win: WindowsControlDeps;
  /** Owners found after discovery, by occupant (at most 256). */
  private readonly owners = new Map<string, string>();

  constructor(private readonly o: CodexAdapterOptions) {
    this.facts = o.proofs ?? selectProofProvider(process.platform, o.clock);
    this.win = {
      provider: this.facts,
      host: o.paneHost,
      clock: o.clock,
      agentProfile: o.windows?.agentProfile ?? homedir(),
    };
    this.writeOptions = {
      confirmTimeoutMs: o.confirmTimeoutMs ?? 8000,
      confirmPollMs: o.confirmPollMs ?? 100,
      callTimeoutMs: o.callTimeoutMs ?? 10_000,
    };
  }

  private proof(kind: string, outcome: ProofFact["outcome"], detail: string): ProofFact {
    return { kind, outcome, detail, completedAtMs: this.o.clock.nowMs() };
  }

  /** The open connection to an endpoint, opened (and initialized) on first use or after a drop. */
  private async connect(
    endpoint: string,
  ): Promise<{ ok: true; connection: CodexConnection; codexHome: string } | { ok: false; detail: string }> {
    const cached = this.connections.get(endpoint);
    if (cached?.connection.isOpen) return { ok: true, ...cached };
    const opened = await CodexConnection.open(endpoint, { timeoutMs: this.writeOptions.callTimeoutMs });
    if (!opened.ok) return { ok: false, detail: `${opened.kind}: ${opened.message}` };
    const entry = { connection: opened.connection, codexHome: opened.codexHome };
    this.connections.set(endpoint, entry);
    return { ok: true, ...entry };
  }

  async discover(pane: PaneInfo, processes: PaneProcessInfo): Promise<SeatRecord | undefined> {
    const tui = await findCodexTui(processes.foregroundProcesses, this.facts);
    if (!tui) return undefined;
    // Windows never joins the shared daemon, nor reaches a refused launch (rule 38).
    const plan = this.facts.platform === "win32" ? windowsControlPlan(tui) : undefined;
    let threadId: string | undefined;
    let backend: { pid: number; startTime: number } | undefined;
    // The CLI queues into a thread it names: the pane host's claim names it, the home proof authorises it.
    if (plan?.kind === "cli_queue" && pane.agentSession?.agent === "codex" && pane.agentSession.kind === "id")
      threadId = pane.agentSession.value;
    if (tui.endpoint && (!plan || plan.kind === "private_app_server")) {
      const c = await this.connect(tui.endpoint);
      // The server must be the one for this pane's home; a different home is not this pane's control.
      if (c.ok && c.codexHome === tui.codexHome) {
        const picked = await pickPaneThread(c.connection, tui.cwd);
        if (picked.ok) threadId = picked.value;
        // The kernel names the process at the other end (TCP, or the daemon's unix socket); every write re-proves it.
        if (this.o.proofs) backend = await backendOfConnection(this.o.proofs, c.connection, tui.endpoint);
      }
    }
    const control: CodexControl = {
      codexHome: tui.codexHome,
      cwd: tui.cwd,
      launch: tui.launch,
      endpoint: tui.endpoint,
      threadId,
      tuiPid: tui.pid,
      tuiStartTime: tui.startTime,
    };
    if (backend) Object.assign(control, { backendPid: backend.pid, backendStartTime: backend.startTime });
    const owner = await codexOwner(this.facts, tui, pane.paneId, this.o.hires);
    if (owner) control.ownedByHire = owner;
    if (plan) control.windows = plan;
    return {
      name: codexSeatName(pane.paneId),
      kind: SeatKind.Codex,
      title: pane.title,
      // A new process lifetime or another thread is another occupant.
      occupantId: `codex:${pane.paneId}:${tui.pid}:${tui.startTime}:${threadId ?? "no-thread"}${backend ? `:${backend.pid}:${backend.startTime}` : ""}`,
      createdAtMs: Date.now(),
      control: { ...control },
    };
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const proofs: ProofFact[] = [];
    const ctl = codexControlOf(seat);
    const none = (status: SeatStatus) => {
      this.proven.delete(seat.name);
      return { snapshot: { status, occupantId: seat.occupantId, inputCapabilities: NO_CAPABILITIES }, proofs };
    };
    if (!ctl) {
      proofs.push(this.proof("codex_control", "refuted", "the seat carries no Codex control facts"));
      return none(SeatStatus.Unknown);
    }
    this.provenCli.delete(seat.name);
    if (ctl.windows?.kind === "refused") {
      proofs.push(this.proof("codex_windows_control", "refuted", `${ctl.windows.reason}: ${ctl.windows.detail}`));
      return none(SeatStatus.Unknown);
    }
    const processProof = async (): Promise<ProofFact | undefined> => {
      if (ctl.tuiPid === undefined || ctl.tuiStartTime === undefined) return undefined;
      const alive = await isSameProcessAlive(this.facts, ctl.tuiPid, ctl.tuiStartTime);
      if (typeof alive === "object")
        return this.proof("codex_process", "unknown", `Codex TUI pid ${ctl.tuiPid}: ${alive.unknown}`);
      return this.proof(
        "codex_process",
        alive ? "proven" : "refuted",
        alive ? `Codex TUI pid ${ctl.tuiPid} (same lifetime)` : `Codex TUI pid ${ctl.tuiPid} is gone or was replaced`,
      );
    };
    const gate = await processProof();
    if (gate?.outcome === "refuted") {
      proofs.push(gate);
      return none(SeatStatus.Offline);
    }
    // The pane and the app-server are read at the same time, so their proofs finish close
    // together and the oldest is as young as it can be at the write (freshness gate).
    const owning = this.ownerOf(seat, ctl);
    const [pane, control, owner, own] = await Promise.all([
      this.paneProof(seat, ctl),
      this.controlProofs(seat, ctl),
      owning,
      this.privateServer(seat, ctl, owning),
    ]);
    // The cheap process check is taken last: the freshest proof, and it catches an exit meanwhile.
    const last = await processProof();
    if (last) proofs.push(last);
    if (pane) proofs.push(pane);
    if (last?.outcome === "refuted") return none(SeatStatus.Offline);
    if (last?.outcome === "unknown") return none(SeatStatus.Unknown);
    if (pane && pane.outcome !== "proven")
      return none(pane.outcome === "refuted" ? SeatStatus.Offline : SeatStatus.Unknown);
    if (ctl.windows?.kind === "cli_queue") return this.inspectCliQueue(seat, ctl, proofs);
    proofs.push(...control.proofs);
    if (!control.proven) return none(control.status);
    // A hired seat is controlled only through its own app-server in its pane (launch-codex.ts).
    if (owner !== undefined && own) {
      proofs.push(own);
      if (own.outcome !== "proven") return none(SeatStatus.Unknown);
    }
    const o = control.proven.observation;
    this.proven.set(seat.name, { ...control.proven, occupantId: seat.occupantId });
    const owned = owner !== undefined;
    const cannotWork = await this.readiness.check(seat.occupantId, control.proven.connection);
    // Ownership decides only what is offered (a stop), never whether a write may go: it is no delivery proof.
    return {
      snapshot: {
        status: statusOf(o),
        occupantId: seat.occupantId,
        inputCapabilities: cannotWork ? NO_CAPABILITIES : owned ? CODEX_LIVE_CAPABILITIES : CODEX_UNOWNED_CAPABILITIES,
        ...(cannotWork ? { cannotWork } : {}),
      },
      proofs,
    };
  }

  /**
   * The hire that owns this occupant: fixed at discovery, or found now when discovery ran before
   * the hire's journal named the pane (a positive answer is kept per occupant; a negative is asked again).
   */
  private async ownerOf(seat: SeatRecord, ctl: CodexControl): Promise<string | undefined> {
    if (ctl.ownedByHire) return ctl.ownedByHire;
    const known = this.owners.get(seat.occupantId);
    if (known) return known;
    if (!this.o.hires || !seat.pane || ctl.tuiPid === undefined || ctl.tuiStartTime === undefined) return undefined;
    const found = await codexOwner(
      this.facts,
      { pid: ctl.tuiPid, startTime: ctl.tuiStartTime },
      seat.pane.paneId,
      this.o.hires,
    );
    if (found) {
      this.owners.set(seat.occupantId, found);
      // Bounded: the oldest occupants go first (a live one is simply found again).
      for (const k of this.owners.keys()) {
        if (this.owners.size <= 256) break;
        this.owners.delete(k);
      }
    }
    return found;
  }

  /** A `--remote unix://` TUI: whether its backend is its own app-server in its pane (codex-private-server.ts). */
  private async privateServer(
    seat: SeatRecord,
    ctl: CodexControl,
    owning: Promise<string | undefined>,
  ): Promise<ProofFact | undefined> {
    if (ctl.launch !== "remote" || !this.o.proofs || !unixSocketPathOf(ctl.endpoint ?? "")) return undefined;
    const recorded = recordedServerOf(this.o.hires, await owning);
    const deps = { provider: this.o.proofs, host: this.o.paneHost, clock: this.o.clock };
    return recorded ? agentServerProof(deps, ctl, recorded) : privateServerProof(deps, seat, ctl);
  }

  /** Windows, a shared-daemon launch: queue through the CLI only on a freshly proven default home and a named thread. */
  private async inspectCliQueue(
    seat: SeatRecord,
    ctl: CodexControl,
    proofs: ProofFact[],
  ): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const home = await defaultHomeProof(this.win, { pid: ctl.tuiPid!, startTime: ctl.tuiStartTime! });
    proofs.push(home);
    if (!ctl.threadId)
      proofs.push(
        this.proof(
          "codex_thread",
          "unknown",
          "the pane host names no Codex thread for this pane; the CLI has nothing to queue into",
        ),
      );
    const ok = home.outcome === "proven" && ctl.threadId !== undefined;
    if (ok) this.provenCli.set(seat.name, seat.occupantId);
    // The daemon is never joined, so its thread's status is not observed.
    return {
      snapshot: {
        status: SeatStatus.Unknown,
        occupantId: seat.occupantId,
        inputCapabilities: ok ? CODEX_CLI_QUEUE_CAPABILITIES : NO_CAPABILITIES,
      },
      proofs,
    };
  }

  private async writeCliQueue(seat: SeatRecord, ctl: CodexControl, message: NativeWrite): Promise<NativeWriteResult> {
    const proven = this.provenCli.get(seat.name) === seat.occupantId;
    this.provenCli.delete(seat.name);
    const notSent = (reason: string, detail: string): NativeWriteResult => ({
      result: AgentResult.NotSent,
      reason,
      detail: `${detail}; nothing was written`,
    });
    if (!proven || !ctl.threadId || ctl.tuiPid === undefined || ctl.tuiStartTime === undefined)
      return notSent("no_native_control", "no default-home CLI queue was proven for this occupant");
    if (message.mode === "steer")
      return notSent(
        "steer_unsupported",
        "the codex queue CLI can only queue; a steer needs a dedicated app-server (codex --remote)",
      );
    const tui = { pid: ctl.tuiPid, startTime: ctl.tuiStartTime };
    const again = await beforeDispatch(this.win, seat, { plan: ctl.windows!, tui, codexHome: ctl.codexHome });
    const failed = again.find((p) => p.outcome !== "proven");
    if (failed) return notSent("proof_failed_before_dispatch", `${failed.kind} ${failed.outcome}: ${failed.detail}`);
    const argv = await this.facts.commandLine(tui);
    if (!argv.known)
      return notSent("proof_failed_before_dispatch", `the TUI's command line: ${argv.reason}: ${argv.detail}`);
    return queueViaCli(this.o.windows?.run ?? runCommand, {
      codexExe: argv.value.argv[0] ?? "",
      threadId: ctl.threadId,
      text: message.text,
    });
  }

  /** The pane still runs this TUI in its foreground (when the seat is in a pane and a host is known). */
  private async paneProof(seat: SeatRecord, ctl: CodexControl): Promise<ProofFact | undefined> {
    if (!seat.pane || !this.o.paneHost || ctl.tuiPid === undefined) return undefined;
    try {
      const info = await this.o.paneHost.processInfo(seat.pane.paneId);
      const inPane = info.foregroundProcesses.some((p) => p.pid === ctl.tuiPid);
      return this.proof(
        "pane_occupant",
        inPane ? "proven" : "refuted",
        inPane
          ? `pane ${seat.pane.paneId} runs pid ${ctl.tuiPid} in its foreground`
          : `pane ${seat.pane.paneId} no longer runs pid ${ctl.tuiPid}`,
      );
    } catch (e) {
      return this.proof("pane_occupant", "unknown", `pane host: ${(e as Error).message}`);
    }
  }

  /** The app-server for this pane's home, and the pane's thread in it, observed now. */
  private async controlProofs(
    seat: SeatRecord,
    ctl: CodexControl,
  ): Promise<{ proofs: ProofFact[]; status: SeatStatus; proven?: ProvenThread }> {
    // Rule 38: --no-daemon launches cannot be steered or queued: no modes, and write refuses.
    if (!ctl.endpoint) return { proofs: [], status: SeatStatus.Unknown };
    // Windows: only a dedicated app-server is ever connected to (rule 38).
    if (ctl.windows && ctl.windows.kind !== "private_app_server") return { proofs: [], status: SeatStatus.Unknown };
    const c = await this.connect(ctl.endpoint);
    if (!c.ok)
      return {
        proofs: [this.proof("codex_control", "refuted", `app-server ${ctl.endpoint} unreachable: ${c.detail}`)],
        status: SeatStatus.Offline,
      };
    const sameHome = c.codexHome === ctl.codexHome;
    // The home is a property of the open connection: stamped when the last read on it finished.
    const homeProof = () =>
      this.proof(
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
          this.proof(
            "codex_thread",
            "unknown",
            "the pane's thread is not known (none or several candidates at discovery)",
          ),
        ],
        status: SeatStatus.Unknown,
      };
    }
    // The kernel proofs run beside the thread read, on the connection the write will use.
    const provider = this.o.proofs;
    const kernelRun = provider ? this.kernelProofs(provider, seat, ctl, c.connection) : Promise.resolve([]);
    const [obs, kernel] = await Promise.all([observeThread(c.connection, ctl.threadId), kernelRun]);
    if (!obs.ok) {
      const definite = obs.reason === "thread_not_loaded" || obs.reason === "thread_ephemeral";
      return {
        proofs: [homeProof(), this.proof("codex_thread", definite ? "refuted" : "unknown", obs.detail), ...kernel],
        status: definite ? SeatStatus.Offline : SeatStatus.Unknown,
      };
    }
    const o = obs.value;
    const thread = this.proof(
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
  private async kernelProofs(
    provider: ProofProvider,
    seat: SeatRecord,
    ctl: CodexControl,
    connection: CodexConnection,
  ): Promise<ProofFact[]> {
    const deps = { provider, host: this.o.paneHost, clock: this.o.clock };
    const inherits =
      ctl.windows?.kind === "private_app_server" && ctl.tuiPid !== undefined && ctl.backendPid !== undefined
        ? launchInheritanceProof(
            this.win,
            { pid: ctl.tuiPid, startTime: ctl.tuiStartTime! },
            { pid: ctl.backendPid, startTime: ctl.backendStartTime! },
          )
        : undefined;
    const [kernel, inherited] = await Promise.all([codexKernelProofs(deps, seat, ctl, connection), inherits]);
    return inherited ? [...kernel, inherited] : kernel;
  }

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    const ctl = codexControlOf(seat);
    if (ctl?.windows?.kind === "refused")
      return {
        result: AgentResult.NotSent,
        reason: ctl.windows.reason,
        detail: `${ctl.windows.detail}; nothing was written`,
      };
    if (ctl?.windows?.kind === "cli_queue") return this.writeCliQueue(seat, ctl, message);
    const p = this.proven.get(seat.name);
    if (!p || p.occupantId !== seat.occupantId) {
      const ctl = codexControlOf(seat);
      const why =
        ctl && !ctl.endpoint
          ? "this Codex runs without a reachable app-server (--no-daemon)"
          : "no live Codex control was proven for this occupant";
      return { result: AgentResult.NotSent, reason: "no_native_control", detail: `${why}; nothing was written` };
    }
    // Consumed by this write: the next write needs a fresh inspect.
    this.proven.delete(seat.name);
    if (!p.connection.isOpen) {
      return {
        result: AgentResult.NotSent,
        reason: "control_lost",
        detail: `the proven app-server connection closed before the write (${p.connection.closeReason ?? "closed"}); nothing was written`,
      };
    }
    if (ctl?.windows?.kind === "private_app_server") {
      // Rule 38: the pane and the private home once more, just before the native write; never a CLI fallback.
      const again = await beforeDispatch(this.win, seat, {
        plan: ctl.windows,
        tui: { pid: ctl.tuiPid!, startTime: ctl.tuiStartTime! },
        backend: { pid: ctl.backendPid!, startTime: ctl.backendStartTime! },
        codexHome: ctl.codexHome,
      });
      const failed = again.find((f) => f.outcome !== "proven");
      if (failed)
        return {
          result: AgentResult.NotSent,
          reason: "proof_failed_before_dispatch",
          detail: `${failed.kind} ${failed.outcome}: ${failed.detail}; nothing was written`,
        };
    }
    // Rule 39: which turn this write joins or waits behind, kept before the request leaves.
    this.writeTurns.record(message.deliveryId, p.observation.threadId, p.observation.activeTurnId);
    return writeToThread(p, message.deliveryId, message.text, message.mode, this.writeOptions);
  }

  async readSession(seat: SeatRecord, sinceMs: number, deliveryId?: string): Promise<SessionRead> {
    const ctl = codexControlOf(seat);
    const gap = (status: SeatStatus): SessionRead => ({
      occupantId: seat.occupantId,
      status,
      entries: [],
      complete: false,
    });
    if (!ctl?.endpoint || !ctl.threadId) return gap(SeatStatus.Unknown);
    // Windows reads only a private app-server: never the shared daemon.
    if (ctl.windows && ctl.windows.kind !== "private_app_server") return gap(SeatStatus.Unknown);
    const c = await this.connect(ctl.endpoint);
    if (!c.ok || c.codexHome !== ctl.codexHome) return gap(SeatStatus.Offline);
    const obs = await observeThread(c.connection, ctl.threadId);
    const msgs = await listClientMessages(c.connection, ctl.threadId, 50);
    const queued = await listQueue(c.connection, ctl.threadId);
    const entries = [
      ...(msgs.ok
        ? msgs.value.messages
            .filter((m) => m.atMs >= sinceMs)
            .map((m) => ({
              deliveryId: m.clientId,
              nativeReceiptId: `${ctl.threadId}/${m.turnId}/${m.itemId}`,
              contentFingerprint: contentFingerprint(m.text),
              atMs: m.atMs,
            }))
        : []),
      // Still waiting in Codex's queue: accepted by the seat, not yet run.
      ...(queued.ok
        ? queued.value.map((q) => ({
            deliveryId: q.clientId,
            nativeReceiptId: `${ctl.threadId}/queue/${q.queuedId}`,
            contentFingerprint: contentFingerprint(q.text),
            atMs: Date.now(),
          }))
        : []),
    ];
    const writeTurn = deliveryId ? await this.writeTurns.observe(c.connection, ctl.threadId, deliveryId) : undefined;
    return {
      occupantId: seat.occupantId,
      status: obs.ok ? statusOf(obs.value) : SeatStatus.Unknown,
      entries,
      complete: msgs.ok && msgs.value.complete && queued.ok,
      ...(writeTurn ? { writeTurn } : {}),
    };
  }

  /** `turn/interrupt` on the exact active turn just observed. Queued items stay queued and do not run. */
  async stop(seat: SeatRecord): Promise<StopResult> {
    const { snapshot } = await this.inspect(seat);
    const p = this.proven.get(seat.name);
    this.proven.delete(seat.name);
    if (!snapshot.inputCapabilities.interrupt || !p)
      return { result: "unsupported", detail: "no live Codex control is attached to this seat" };
    const { threadId, activeTurnId } = p.observation;
    if (!activeTurnId) return { result: "already_finished", detail: `thread ${threadId} has no active turn` };
    const r = await p.connection.call(
      "turn/interrupt",
      { threadId, turnId: activeTurnId },
      this.writeOptions.callTimeoutMs,
    );
    if (!r.ok && r.kind === "error") {
      if (/no active turn/i.test(r.message)) return { result: "already_finished", detail: r.message };
      return { result: "unavailable", detail: `turn/interrupt refused: ${r.message}` };
    }
    if (!r.ok) return { result: "uncertain", detail: `turn/interrupt sent but its answer was lost (${r.kind})` };
    const q = await listQueue(p.connection, threadId);
    const left = q.ok ? q.value.length : undefined;
    const note = left
      ? `; ${left} queued message(s) stay in Codex's queue and will not run by themselves after an interrupt`
      : "";
    return { result: "stopped", detail: `interrupted turn ${activeTurnId}${note}` };
  }

  /** Closes every app-server connection (agent shutdown). */
  close(): void {
    for (const { connection } of this.connections.values()) connection.close();
    this.connections.clear();
    this.proven.clear();
    this.owners.clear();
  }
}
