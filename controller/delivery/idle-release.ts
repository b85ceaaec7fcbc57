/**
 * Rule 39 (ADR 0207): native idle releases dispatch only after the exact active turn is observed
 * terminal. The unattended release of an unresolved original (dispatch.ts) asks this: the seat
 * read idle and its session, read in full, lacked the original; and where the harness has turn
 * ids (Codex), the exact turn the original's write joined or waited behind now reads completed,
 * interrupted or failed. Claude Code and OpenCode name no turns; their agents report the same
 * state from what each gives (Claude's transcript: the running prompt's end_turn, our event not in
 * its queue; OpenCode's message ids and the final assistant message's completion): see each
 * harness's write-turns.ts. A turn still active, or one the agent cannot name (it restarted since
 * the write), keeps the fence. Pi's read is never complete (a queued message is in neither its
 * file nor our record), so it never reaches here as absent; a mailbox has no turns, and its idle
 * status decides.
 */
import type { SessionEvidence } from "./session-evidence.js";

export function idleReleases(evidence: SessionEvidence): boolean {
  if (evidence.kind !== "absent" || evidence.status !== "idle") return false;
  return evidence.writeTurn === undefined || evidence.writeTurn === "terminal";
}
