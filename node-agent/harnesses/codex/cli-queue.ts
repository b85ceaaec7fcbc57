/**
 * Windows, a Codex joined to the shared daemon (rule 38): the daemon is never joined, so the seat
 * queues through the `codex queue` CLI, and only into a thread the pane host names, on a default home
 * proven at the last inspect and again just before the write. Nothing else: no steer, no stop.
 */
import { AgentResult, SeatStatus } from "../../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import type { ProofProvider } from "../../proofs/provider.js";
import type { CommandRunner } from "../../proofs/run-command.js";
import type { NativeWrite, NativeWriteResult, SeatRecord, SeatSnapshot } from "../adapter.js";
import type { CodexControl } from "./control.js";
import { CODEX_CLI_QUEUE_CAPABILITIES, NO_CAPABILITIES, stamp } from "./inspection.js";
import { beforeDispatch, defaultHomeProof, queueViaCli, type WindowsControlDeps } from "./windows.js";

export class CodexCliQueue {
  /** Seats whose last inspect proved the default home, by seat name → occupant. */
  private readonly proven = new Map<string, string>();

  constructor(
    private readonly d: { clock: MonotonicClock; facts: ProofProvider; win: WindowsControlDeps; run: CommandRunner },
  ) {}

  /** A new inspect starts from nothing proven. */
  forget(seatName: string): void {
    this.proven.delete(seatName);
  }

  /** Windows, a shared-daemon launch: queue through the CLI only on a freshly proven default home and a named thread. */
  async inspect(
    seat: SeatRecord,
    ctl: CodexControl,
    proofs: ProofFact[],
  ): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const home = await defaultHomeProof(this.d.win, { pid: ctl.tuiPid!, startTime: ctl.tuiStartTime! });
    proofs.push(home);
    if (!ctl.threadId)
      proofs.push(
        stamp(
          this.d.clock,
          "codex_thread",
          "unknown",
          "the pane host names no Codex thread for this pane; the CLI has nothing to queue into",
        ),
      );
    const ok = home.outcome === "proven" && ctl.threadId !== undefined;
    if (ok) this.proven.set(seat.name, seat.occupantId);
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

  async write(seat: SeatRecord, ctl: CodexControl, message: NativeWrite): Promise<NativeWriteResult> {
    const proven = this.proven.get(seat.name) === seat.occupantId;
    this.proven.delete(seat.name);
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
    const again = await beforeDispatch(this.d.win, seat, { plan: ctl.windows!, tui, codexHome: ctl.codexHome });
    const failed = again.find((p) => p.outcome !== "proven");
    if (failed) return notSent("proof_failed_before_dispatch", `${failed.kind} ${failed.outcome}: ${failed.detail}`);
    const argv = await this.d.facts.commandLine(tui);
    if (!argv.known)
      return notSent("proof_failed_before_dispatch", `the TUI's command line: ${argv.reason}: ${argv.detail}`);
    return queueViaCli(this.d.run, {
      codexExe: argv.value.argv[0] ?? "",
      threadId: ctl.threadId,
      text: message.text,
    });
  }
}
