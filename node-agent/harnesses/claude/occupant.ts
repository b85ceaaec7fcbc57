/**
 * Who occupies a Claude seat (rule 46): one process lifetime (pid + start time, so a reused
 * pid is someone else) running one session (a new session in the same process, e.g. after
 * /clear or /resume, is someone else too). The pid alone names neither.
 */
import type { ProofProvider } from "../../proofs/provider.js";
import { selectProofProvider } from "../../proofs/select.js";
import { readSessionReport } from "./session-report.js";

export interface ClaudeOccupant {
  pid: number;
  /** The process's start time as the proof provider reports it; undefined where it cannot tell or the process is gone. */
  startTime: number | undefined;
  /** The session SessionStart last reported for this process; undefined before the first report. */
  sessionId: string | undefined;
}

export function claudeOccupantId(o: ClaudeOccupant): string {
  return `claude:${o.pid}:${o.startTime ?? "no-start-time"}:${o.sessionId ?? "no-session"}`;
}

let fallbackProofs: ProofProvider | undefined;

/** This machine's provider, made once, for callers that were not handed one (tests, hooks). */
export function machineProofs(): ProofProvider {
  return (fallbackProofs ??= selectProofProvider());
}

/**
 * The occupant as it is now: the live process's start time (through the proof provider, so
 * every OS answers the same way and an unknown is never guessed) and the session its hook
 * last reported.
 */
export async function observeClaudeOccupant(
  pid: number,
  reportDir: string,
  proofs: ProofProvider = machineProofs(),
): Promise<ClaudeOccupant & { alive: boolean }> {
  const entry = await proofs.identify(pid);
  const alive = entry.known;
  return {
    pid,
    startTime: entry.known ? entry.value.startTime : undefined,
    sessionId: readSessionReport(reportDir, pid)?.sessionId,
    alive,
  };
}
