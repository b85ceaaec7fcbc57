/**
 * Rule 39 (ADR 0207): native idle releases dispatch only after the exact active turn is observed
 * terminal. The unattended release of an unresolved original (dispatch.ts) asks this: the seat
 * read idle and its session, read in full, lacked the original; and where the harness has turn
 * ids (Codex), the exact turn the original's write joined or waited behind now reads completed,
 * interrupted or failed. A turn still active, or one the agent cannot name (it restarted since the
 * write), keeps the fence. A harness without turn ids (mailbox, Pi, Claude, OpenCode) says nothing
 * of a turn, and its idle status decides as before.
 */
import type { SessionEvidence } from "./session-evidence.js";

export function idleReleases(evidence: SessionEvidence): boolean {
  if (evidence.kind !== "absent" || evidence.status !== "idle") return false;
  return evidence.writeTurn === undefined || evidence.writeTurn === "terminal";
}
