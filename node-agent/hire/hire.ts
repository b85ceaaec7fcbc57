/**
 * One hire on the node agent (ADR 0213, rule 52): reserve the id in the host journal,
 * check what only this machine knows, commit the launch durably, open one new pane with
 * the harness opted in to its native channel, wait (≤30 s) until discovery finds and the
 * adapter proves the new seat, then deliver the brief through the ordinary delivery
 * pipeline (native channel, freshness gate), never by typing. An id that reached
 * launch_committed is never launched again: a repeat returns the recorded answer, or
 * start_unconfirmed when there is none. Only a pane this hire opened is closed, and only
 * after a definite launch failure.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../shared/logger.js";
import type { DeliverDeps } from "../deliver/deliver.js";
import { briefSeat } from "./brief.js";
import type { SeatLocks } from "../seats/seat-locks.js";
import type { HostJournal, HostHireRecord, RecordedAnswer } from "./host-journal.js";
import { findBinary, type HireHarness } from "./harnesses.js";
import type { HarnessLauncher, LaunchContext } from "./launcher.js";
import type { PaneOpener } from "./pane-opener.js";
import { checkDirectory, checkTitle } from "./validate.js";
import { observeHire, type CensusView } from "./census.js";
import type { ProofProvider } from "../proofs/provider.js";
import { waitReady } from "./readiness.js";
import { cannotWorkFix, closeHirePane, watchBriefTurn } from "./not-ready.js";
import type { CannotWork } from "../harnesses/adapter.js";
import type { HireFaultPoint } from "./faults.js";
import type { CodexServerKeeper } from "../harnesses/codex/server-keeper.js";
export { READINESS_MS } from "./readiness.js";

export interface HireOptions {
  /** Binaries per harness; default: the harness's name on PATH. */
  bins?: Partial<Record<HireHarness, string>> | undefined;
  /** Extra environment for every launched harness (homes, provider settings). */
  env?: Record<string, string> | undefined;
  maxHiredSeats?: number | undefined;
  readinessMs?: number | undefined;
  claudeChannel?: "plugin" | "development" | undefined;
  /** Pre-approve the hired worker's Clankie tools in its harness (launcher.ts); default "owner": no approval added. */
  workerToolApproval?: "owner" | "approve" | undefined;
  /** The lost-answer suites' fault point (faults.ts); never set in production. */
  fault?: HireFaultPoint | undefined;
}

export interface HireDeps extends DeliverDeps {
  journal: HostJournal;
  /** Process facts for the census (the marked processes). */
  proofs: ProofProvider;
  opener: PaneOpener | undefined;
  launchers: Map<HireHarness, HarnessLauncher>;
  locks: SeatLocks;
  /** Runs (or joins) a discovery scan. */
  scanNow: () => Promise<unknown>;
  stateDir: string;
  claudeChannelDir: string;
  claudeReportDir: string;
  piSocketDir: string;
  options: HireOptions;
  logger: Logger;
  /** Stops agent-started Codex app-servers once their hire's TUI is gone (Herdr; codex-server-keeper.ts). */
  servers?: CodexServerKeeper | undefined;
}

export interface HireCommand {
  hireId: string;
  fingerprint: string;
  harness: string;
  workingDirectory: string;
  title: string;
  role: string;
  brief: string;
  model: string;
  effort: string;
  conversationId: string;
}

export interface HireAnswer extends RecordedAnswer {
  replayed: boolean;
}

export class Hirer {
  /** One operation per hire id at a time in this process (hire, census). */
  private readonly running = new Map<string, Promise<unknown>>();
  /** Hires launching right now: they count against the capacity before their seats exist. */
  private readonly launching = new Set<string>();

  constructor(private readonly d: HireDeps) {}

  private serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.running.get(id) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    this.running.set(id, next);
    void next
      .finally(() => {
        if (this.running.get(id) === next) this.running.delete(id);
      })
      .catch(() => undefined);
    return next;
  }

  hire(cmd: HireCommand): Promise<HireAnswer> {
    return this.serial(cmd.hireId, async () => {
      try {
        return await this.hireOnce(cmd);
      } finally {
        this.launching.delete(cmd.hireId);
      }
    });
  }

  census(
    hireId: string,
    seal: boolean,
  ): Promise<{ record: HostHireRecord | undefined; view: CensusView; seatName: string | undefined }> {
    return this.serial(hireId, async () => {
      let record = this.d.journal.read(hireId);
      if (seal && (!record || record.state === "reserved")) {
        record = { ...(record ?? { hireId, fingerprint: "", reservedAtMs: Date.now() }), state: "sealed" };
        this.d.journal.write(record);
      }
      const view = await observeHire(hireId, this.d.proofs, this.d.opener, record?.paneId);
      const seat = record?.paneId
        ? this.d.seats.discoveredSeats().find((s) => s.pane?.paneId === record!.paneId)
        : undefined;
      return { record, view, seatName: seat?.name };
    });
  }

  private async hireOnce(cmd: HireCommand): Promise<HireAnswer> {
    const existing = this.d.journal.read(cmd.hireId);
    if (existing) {
      if (existing.fingerprint && existing.fingerprint !== cmd.fingerprint)
        throw new HireRefusedError(
          "this hire id was used for a different request on this machine; nothing was launched",
        );
      return this.replay(existing);
    }
    const rec: HostHireRecord = {
      hireId: cmd.hireId,
      fingerprint: cmd.fingerprint,
      state: "reserved",
      harness: cmd.harness,
      reservedAtMs: Date.now(),
    };
    this.d.journal.write(rec);
    const finish = (answer: RecordedAnswer): HireAnswer => {
      this.d.journal.write({ ...rec, state: "finished", answer });
      // From now on the server lives as long as the pane's TUI (a failure already stopped it).
      if (rec.codexServer) this.d.servers?.watch(rec.hireId);
      return { ...answer, replayed: false };
    };
    const refuse = (reason: string, detail: string, controlFix?: string) =>
      finish({
        outcome: "failed",
        reason,
        detail,
        launchCommitted: false,
        ...(controlFix ? { controlReason: reason, controlFix } : {}),
      });

    // What only this machine knows, before anything is launched.
    const dirProblem = checkDirectory(cmd.workingDirectory) ?? checkTitle(cmd.title);
    if (dirProblem) return refuse(dirProblem.reason, dirProblem.detail, dirProblem.controlFix);
    const harness = cmd.harness as HireHarness;
    const launcher = this.d.launchers.get(harness);
    const bin = launcher
      ? findBinary(harness, this.d.options.bins?.[harness], this.d.options.env?.PATH ?? process.env.PATH)
      : undefined;
    if (!launcher || !bin)
      return refuse(
        "harness_unavailable",
        `this machine cannot start ${cmd.harness}: ${launcher ? "its binary is not installed" : "no launcher"}; nothing was launched`,
        `install ${cmd.harness} on this machine (or configure its binary for the agent)`,
      );
    if (!this.d.opener)
      return refuse(
        "harness_unavailable",
        "this agent runs without a pane host (--pane-host none), so it cannot open a pane; nothing was launched",
        "start the agent with --pane-host tmux or herdr",
      );
    const max = this.d.options.maxHiredSeats ?? 8;
    const live = this.d.journal
      .all()
      .filter(
        (r) =>
          r.state === "finished" &&
          r.answer?.outcome === "spawned" &&
          r.paneId &&
          this.d.seats.discoveredSeats().some((s) => s.pane?.paneId === r.paneId),
      ).length;
    if (live + this.launching.size >= max) {
      return refuse(
        "at_capacity",
        `this machine already runs ${live} hired seats and ${this.launching.size} hires are starting (limit ${max}); nothing was launched`,
        "close a hired seat's pane, or raise the agent's hire limit",
      );
    }
    this.launching.add(cmd.hireId);

    const hireDir = join(this.d.stateDir, "hires", cmd.hireId.toLowerCase());
    mkdirSync(hireDir, { recursive: true, mode: 0o700 });
    const ctx: LaunchContext = {
      bin,
      hireDir,
      claudeChannelDir: this.d.claudeChannelDir,
      claudeReportDir: this.d.claudeReportDir,
      piSocketDir: this.d.piSocketDir,
      claudeChannel: this.d.options.claudeChannel ?? "plugin",
      agentStateDir: this.d.stateDir,
      workerToolApproval: this.d.options.workerToolApproval ?? "owner",
      env: this.d.options.env ?? {},
      paneHost: this.d.opener.kind,
      proofs: this.d.proofs,
    };
    // The boundary: from here a lost answer may hide a launch, so this id never launches again.
    rec.state = "launch_committed";
    rec.committedAtMs = Date.now();
    this.d.journal.write(rec);
    let plan;
    try {
      plan = await launcher.plan(
        {
          hireId: cmd.hireId,
          workingDirectory: cmd.workingDirectory,
          title: cmd.title,
          model: cmd.model || undefined,
          effort: cmd.effort || undefined,
        },
        ctx,
      );
    } catch (e) {
      return finish({
        outcome: "failed",
        reason: "launch_failed",
        detail: `${harness} could not be prepared: ${(e as Error).message}`,
        launchCommitted: true,
      });
    }
    if (plan.codexServer) {
      // Before the pane opens: a restarted agent re-derives the server from here, never from the worker.
      rec.codexServer = plan.codexServer;
      this.d.journal.write(rec);
    }
    const stopSidecars = async () => {
      for (const s of plan.sidecars ?? []) await s.stop().catch(() => undefined);
    };
    const opened = await this.d.opener.open({
      hireId: cmd.hireId,
      title: cmd.title,
      cwd: cmd.workingDirectory,
      argv: plan.argv,
      env: { ...ctx.env, ...plan.env },
      harness,
    });
    if (!opened.ok) {
      await stopSidecars();
      // No pane was ever opened: nothing can have launched.
      return finish({
        outcome: "failed",
        reason: opened.reason,
        detail: opened.detail,
        launchCommitted: opened.paneId !== undefined,
        paneId: opened.paneId,
        paneClosed: opened.paneClosed,
        ...(opened.controlFix ? { controlReason: opened.reason, controlFix: opened.controlFix } : {}),
      });
    }
    const paneId = opened.pane.paneId;
    rec.paneId = paneId;
    rec.session = opened.pane.session;
    this.d.journal.write(rec);
    this.d.logger.info("hire pane opened", { hireId: cmd.hireId, paneId, harness });

    const ready = await waitReady(this.d, this.d.opener, paneId, harness, launcher);
    const base = { paneId, launchCommitted: true };
    const notReady = async (c: CannotWork, detail: string, brief?: Partial<RecordedAnswer>) => {
      // Definite: the harness itself refuses turns. This hire opened the pane, so it closes it; no seat stays.
      await closeHirePane(this.d, this.d.opener!, paneId, stopSidecars);
      return finish({
        ...base,
        ...brief,
        outcome: "failed",
        reason: "not_ready",
        detail,
        paneClosed: true,
        controlReason: c.reason,
        controlFix: cannotWorkFix(harness, c),
      });
    };
    if (ready.kind === "cannot_work") return notReady(ready.cannotWork, ready.detail);
    if (ready.kind === "failed") {
      // Definite: the harness exited. This hire opened the pane, so it closes it.
      await this.d.opener.close(paneId).catch(() => undefined);
      await stopSidecars();
      return finish({ ...base, outcome: "failed", reason: "launch_failed", detail: ready.detail, paneClosed: true });
    }
    if (ready.kind === "blocked" && ready.block.definite) {
      // Definite: this session can never be a seat (Claude refused the plugin channel). This hire opened the pane, so it closes it.
      await this.d.opener.close(paneId).catch(() => undefined);
      await stopSidecars();
      return finish({
        ...base,
        outcome: "failed",
        reason: "not_ready",
        detail: ready.detail,
        paneClosed: true,
        controlReason: ready.block.kind,
        controlFix: ready.block.fix,
      });
    }
    if (ready.kind === "blocked") {
      return finish({
        ...base,
        outcome: "failed",
        reason: ready.block.kind === "trust_required" ? "trust_required" : "not_ready",
        detail: ready.detail,
        controlReason: ready.block.kind,
        controlFix: ready.block.fix,
      });
    }
    if (ready.kind === "timeout") {
      return finish({
        ...base,
        outcome: "failed",
        reason: "not_ready",
        detail: ready.detail,
        controlReason: "not_ready",
        controlFix: `pane ${paneId} is still open: look at it, then message its seat once list_seats shows it, or close it`,
      });
    }
    const answer = await briefSeat(this.d, cmd, ready.seat, { paneId, harness }, this.d.options.fault);
    const m = answer.outcome === "spawned" && answer.briefMechanism !== "none" ? answer.briefMechanism : undefined;
    // The brief's turn began: the harness may still refuse it (Codex's model server gone, issue 35).
    const follower = m
      ? await this.d.adapters
          .get(ready.seat.kind)
          ?.followTurn?.(ready.seat)
          .catch(() => undefined)
      : undefined;
    let refused: CannotWork | undefined;
    try {
      if (m) refused = await watchBriefTurn(this.d, this.d.opener, launcher, ready.seat.name, paneId, follower);
    } finally {
      follower?.close();
    }
    if (m && refused)
      return notReady(
        refused,
        `${harness} in pane ${paneId} took the brief (${m}) but cannot take a turn: ${refused.detail}`,
        {
          briefMechanism: m,
          briefDeliveryId: answer.briefDeliveryId,
          proofs: answer.proofs,
        },
      );
    return finish(answer);
  }

  /** Agent shutdown: servers of live hires keep running (a restarted agent adopts them). */
  close(): void {
    this.d.servers?.close();
  }

  private replay(rec: HostHireRecord): HireAnswer {
    if (rec.state === "finished" && rec.answer) return { ...rec.answer, replayed: true };
    if (rec.state === "sealed")
      return {
        outcome: "failed",
        reason: "settled",
        detail: "this hire id was sealed by an owner settle on this machine; it is never launched",
        launchCommitted: false,
        replayed: true,
      };
    // Reserved or committed by an agent that did not finish: its fate is unknown and it is never launched again.
    return {
      outcome: "failed",
      reason: "start_unconfirmed",
      detail: `this hire id is ${rec.state} on this machine without a recorded answer (an earlier agent did not finish it)${rec.paneId ? `; pane ${rec.paneId}` : ""}; it is never launched again`,
      launchCommitted: rec.state === "launch_committed",
      paneId: rec.paneId,
      replayed: true,
    };
  }
}

export class HireRefusedError extends Error {}
