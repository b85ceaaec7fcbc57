/**
 * Whether a Codex seat is owned (rules 36 and 47): this agent's own hire launched the exact
 * TUI process in that pane. The proof is the process's kernel-held environment carrying the
 * hire marker, and the agent's host journal recording that hire as a Codex launch in the same
 * pane. A TUI someone else started (or a new process in a hired pane) is unowned: it gets no
 * interrupt, because stopping a turn is the hirer's authority, not an observer's.
 * On Herdr (agent.start takes no environment, so no marker) the TUI is owned when it runs with
 * Herdr's own HERDR_PANE_ID of the pane a Codex hire recorded with an agent-started app-server
 * (its control is then gated by that server's proof, codex-private-server-herdr.ts).
 */
import { HIRE_ENV } from "../../hire/pane-opener.js";
import type { RecordedCodexServer } from "../../hire/host-journal.js";
import type { ProofProvider } from "../../proofs/provider.js";

/** The host journal, as ownership needs it: which pane a hire id opened for which harness. */
export interface HireLookup {
  /** The pane and harness a hire recorded, or undefined when the id is unknown or unreadable. */
  launched(
    hireId: string,
  ):
    | { paneId?: string | undefined; harness?: string | undefined; codexServer?: RecordedCodexServer | undefined }
    | undefined;
  /** The hire that recorded this pane (a Herdr launch carries no marker). */
  ofPane?(paneId: string):
    | {
        hireId: string;
        paneId?: string | undefined;
        harness?: string | undefined;
        codexServer?: RecordedCodexServer | undefined;
      }
    | undefined;
}

/** The hire id that owns this TUI in this pane, or undefined (unowned, or not provable). */
export async function codexOwner(
  provider: ProofProvider,
  tui: { pid: number; startTime: number },
  paneId: string,
  hires: HireLookup | undefined,
): Promise<string | undefined> {
  if (!hires) return undefined;
  const env = await provider.environment(tui);
  if (!env.known) return undefined;
  const hireId = env.value.get(HIRE_ENV);
  if (!hireId) {
    if (env.value.get("HERDR_PANE_ID") !== paneId) return undefined;
    try {
      const rec = hires.ofPane?.(paneId);
      return rec?.harness === "codex" &&
        rec.paneId === paneId &&
        rec.codexServer &&
        rec.codexServer.stoppedAtMs === undefined
        ? rec.hireId
        : undefined;
    } catch {
      return undefined;
    }
  }
  let rec;
  try {
    rec = hires.launched(hireId);
  } catch {
    return undefined;
  }
  return rec?.harness === "codex" && rec.paneId === paneId ? hireId : undefined;
}
