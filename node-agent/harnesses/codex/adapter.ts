/**
 * Codex seats: a Codex TUI in a pane, controlled through the app-server it is attached to
 * (the shared daemon under its own CODEX_HOME, or the app-server it joined with --remote).
 * inspect proves the occupant process here and the pane, the server's home, the pane's thread
 * and the kernel facts of that connection in inspection.ts, and keeps the connection; write goes
 * through the same connection (write.ts). Capabilities come only from that live control
 * (inventory rules 36, 45-47): an owned seat (this agent's hire launched the TUI, ownership.ts)
 * gets [steer, queue] + interrupt; an unowned one whose endpoint is reachable and proven gets
 * [steer, queue] and no interrupt; without live control (`--no-daemon`, unreachable), none. Queue
 * is always its own native route (`thread/queue/add`), never a steer that fell back. On Windows a
 * shared-daemon launch queues through the CLI only (cli-queue.ts); reconcile reads the session
 * through session.ts.
 */
import { AgentResult, SeatKind, SeatStatus } from "../../../shared/verdicts.js";
import type { PaneHost, PaneInfo, PaneProcessInfo } from "../../panes/pane-host.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type { ProofProvider } from "../../proofs/provider.js";
import { selectProofProvider } from "../../proofs/select.js";
import type {
  HarnessAdapter,
  NativeWrite,
  NativeWriteResult,
  SeatRecord,
  SeatSnapshot,
  SessionRead,
  StopResult,
  TurnFollower,
} from "../adapter.js";
import { CodexConnection } from "./connection.js";
import { backendOfConnection } from "./kernel.js";
import { findCodexTui, isSameProcessAlive } from "./process.js";
import { listQueue, pickPaneThread } from "./thread.js";
import { CodexReadiness, followCodexTurn } from "./readiness.js";
import { CodexWriteTurns } from "./write-turns.js";
import { writeToThread, type CodexWriteOptions, type ProvenThread } from "./write.js";
import { beforeDispatch, windowsControlPlan, type WindowsControlDeps } from "./windows.js";
import { runCommand, type CommandRunner } from "../../proofs/run-command.js";
import { codexOwner, type HireLookup } from "./ownership.js";
import { codexControlOf, type CodexControl } from "./control.js";
import {
  CODEX_LIVE_CAPABILITIES,
  CODEX_UNOWNED_CAPABILITIES,
  NO_CAPABILITIES,
  controlProofs,
  paneProof,
  privateServer,
  stamp,
  statusOf,
  type Connected,
  type InspectionDeps,
} from "./inspection.js";
import { CodexCliQueue } from "./cli-queue.js";
import { readCodexSession } from "./session.js";
import { homedir } from "node:os";

export { codexControlOf, type CodexControl } from "./control.js";

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
  /** Windows seats joined to the shared daemon: the `codex queue` CLI (cli-queue.ts). */
  private readonly cliQueue: CodexCliQueue;
  /** What the inspect's proofs read (inspection.ts). */
  private readonly inspection: InspectionDeps;
  /** Owners found after discovery, by occupant (at most 256). */
  private readonly owners = new Map<string, string>();

  constructor(private readonly o: CodexAdapterOptions) {
    this.facts = o.proofs ?? selectProofProvider(process.platform, o.clock);
    const win: WindowsControlDeps = {
      provider: this.facts,
      host: o.paneHost,
      clock: o.clock,
      agentProfile: o.windows?.agentProfile ?? homedir(),
    };
    this.cliQueue = new CodexCliQueue({ clock: o.clock, facts: this.facts, win, run: o.windows?.run ?? runCommand });
    this.inspection = { ...o, win, connect: (endpoint) => this.connect(endpoint) };
    this.writeOptions = {
      confirmTimeoutMs: o.confirmTimeoutMs ?? 8000,
      confirmPollMs: o.confirmPollMs ?? 100,
      callTimeoutMs: o.callTimeoutMs ?? 10_000,
    };
  }

  /** The open connection to an endpoint, opened (and initialized) on first use or after a drop. */
  private async connect(endpoint: string): Promise<Connected> {
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
      proofs.push(stamp(this.o.clock, "codex_control", "refuted", "the seat carries no Codex control facts"));
      return none(SeatStatus.Unknown);
    }
    this.cliQueue.forget(seat.name);
    if (ctl.windows?.kind === "refused") {
      proofs.push(
        stamp(this.o.clock, "codex_windows_control", "refuted", `${ctl.windows.reason}: ${ctl.windows.detail}`),
      );
      return none(SeatStatus.Unknown);
    }
    const processProof = async (): Promise<ProofFact | undefined> => {
      if (ctl.tuiPid === undefined || ctl.tuiStartTime === undefined) return undefined;
      const alive = await isSameProcessAlive(this.facts, ctl.tuiPid, ctl.tuiStartTime);
      if (typeof alive === "object")
        return stamp(this.o.clock, "codex_process", "unknown", `Codex TUI pid ${ctl.tuiPid}: ${alive.unknown}`);
      return stamp(
        this.o.clock,
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
      paneProof(this.inspection, seat, ctl),
      controlProofs(this.inspection, seat, ctl),
      owning,
      privateServer(this.inspection, seat, ctl, owning),
    ]);
    // The cheap process check is taken last: the freshest proof, and it catches an exit meanwhile.
    const last = await processProof();
    if (last) proofs.push(last);
    if (pane) proofs.push(pane);
    if (last?.outcome === "refuted") return none(SeatStatus.Offline);
    if (last?.outcome === "unknown") return none(SeatStatus.Unknown);
    if (pane && pane.outcome !== "proven")
      return none(pane.outcome === "refuted" ? SeatStatus.Offline : SeatStatus.Unknown);
    if (ctl.windows?.kind === "cli_queue") return this.cliQueue.inspect(seat, ctl, proofs);
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

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    const ctl = codexControlOf(seat);
    if (ctl?.windows?.kind === "refused")
      return {
        result: AgentResult.NotSent,
        reason: ctl.windows.reason,
        detail: `${ctl.windows.detail}; nothing was written`,
      };
    if (ctl?.windows?.kind === "cli_queue") return this.cliQueue.write(seat, ctl, message);
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
      const again = await beforeDispatch(this.inspection.win, seat, {
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
    const read = await readCodexSession((endpoint) => this.connect(endpoint), seat, sinceMs);
    if (!deliveryId) return read;
    // Rule 39: the exact turn this delivery's write joined or waited behind, as the thread shows it now.
    const ctl = codexControlOf(seat);
    if (!ctl?.endpoint || !ctl.threadId) return { ...read, writeTurn: "unknown" };
    const c = await this.connect(ctl.endpoint);
    if (!c.ok || c.codexHome !== ctl.codexHome) return { ...read, writeTurn: "unknown" };
    return { ...read, writeTurn: await this.writeTurns.observe(c.connection, ctl.threadId, deliveryId) };
  }

  /** The turn a write started on the seat's fresh thread, on the connection its writes use (cached per endpoint). */
  async followTurn(seat: SeatRecord): Promise<TurnFollower | undefined> {
    const ctl = codexControlOf(seat);
    if (!ctl?.endpoint || !ctl.threadId) return undefined;
    const c = await this.connect(ctl.endpoint);
    return c.ok ? followCodexTurn(c.connection, ctl.threadId) : undefined;
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
