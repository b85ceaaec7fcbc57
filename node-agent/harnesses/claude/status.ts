/**
 * A Claude seat's busy or idle: the pane host's view, else the turn hooks', else the
 * transcript's, with Claude's own input queue counted (a seat with input queued is about to
 * start its next turn, so it is not idle).
 */
import { SeatStatus } from "../../../shared/verdicts.js";
import type { PaneAgentStatus } from "../../panes/pane-host.js";
import { readTurnReport, type ClaudeTurnReport } from "./session-report.js";
import type { TranscriptRead } from "./transcript.js";

/**
 * Busy or idle from the turn hooks, checked against the transcript: a prompt written after the
 * last Stop is a new turn (its hook may still be running); an interruption written after the
 * last UserPromptSubmit ended that turn (Stop does not fire on Esc). Undefined when no hook
 * has reported for this session.
 */
export function turnFromHooks(
  turn: ClaudeTurnReport | undefined,
  sessionId: string,
  t: TranscriptRead,
): SeatStatus | undefined {
  if (!turn || turn.sessionId !== sessionId) return undefined;
  if (turn.state === "idle") return t.lastPromptAtMs > turn.atMs ? SeatStatus.Working : SeatStatus.Idle;
  return t.interruptedAtMs > turn.atMs ? SeatStatus.Idle : SeatStatus.Working;
}

/** A Claude seat's status: the pane host's view, else the turn hooks', else the transcript's. */
export function liveStatus(
  pane: PaneAgentStatus | undefined,
  control: { reportDir: string; claudePid: number },
  sessionId: string,
  t: TranscriptRead,
  fallback: SeatStatus = SeatStatus.Idle,
): SeatStatus {
  const fromPane =
    pane === "working"
      ? SeatStatus.Working
      : pane === "blocked"
        ? SeatStatus.Blocked
        : pane === "idle" || pane === "done"
          ? SeatStatus.Idle
          : undefined;
  const turn = turnFromHooks(readTurnReport(control.reportDir, control.claudePid), sessionId, t);
  const status =
    fromPane ?? turn ?? (t.turn === "working" ? SeatStatus.Working : t.turn === "idle" ? SeatStatus.Idle : fallback);
  // Between two turns, with input queued, Claude is about to start the next: not idle. (Observed
  // under load: the Stop hook files idle, and the dequeue comes a few ms to 100+ ms later.)
  return status === SeatStatus.Idle && t.queueDepth > 0 ? SeatStatus.Working : status;
}
