/**
 * Recognising an interactive Claude Code in a pane: a foreground `claude` process (never
 * print mode) whose Clankie channel socket exists in this agent's channel directory under
 * that process's pid, or, without the channel, whose own SessionStart hook reported the
 * session's inbox socket (2.1.224+) and that socket exists. Anything less is not a seat: a
 * saved session id confers nothing.
 */
import { existsSync } from "node:fs";
import { SeatKind } from "../../../shared/verdicts.js";
import type { PaneInfo, PaneProcessInfo } from "../../panes/pane-host.js";
import type { SeatRecord } from "../adapter.js";
import { isClaude, isPrintMode, optedIn } from "./process.js";
import { channelPaths } from "./channel-wire.js";
import { claudeOccupantId, observeClaudeOccupant } from "./occupant.js";
import { readSessionReport } from "./session-report.js";
import type { ProofProvider } from "../../proofs/provider.js";

export function createClaudeDiscover(channelDir: string, reportDir: string, proofs?: ProofProvider) {
  return async (pane: PaneInfo, processes: PaneProcessInfo): Promise<SeatRecord | undefined> => {
    for (const p of processes.foregroundProcesses) {
      // Any OS's form of the CLI (claude-process.ts): a Windows path has backslashes.
      if (!isClaude(p.argv) || isPrintMode(p.argv)) continue;
      const channel = existsSync(channelPaths(channelDir, p.pid).socketPath);
      const inbox = readSessionReport(reportDir, p.pid)?.inbox;
      // A Claude started with the channel opt-in (a hire, or an owner who chose it) is a channel
      // seat once its channel is up, never an inbox seat in the moment before.
      if (!channel && (optedIn(p.argv) || !(inbox && existsSync(inbox.socketPath)))) continue;
      // The occupant is this process lifetime in this session, not the pid (rule 46).
      const occupant = await observeClaudeOccupant(p.pid, reportDir, proofs);
      return {
        name: `claude-${pane.paneId.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^-+/, "")}`,
        kind: SeatKind.Claude,
        title: pane.title,
        occupantId: claudeOccupantId(occupant),
        createdAtMs: Date.now(),
        // The channel when Claude opted in to it; otherwise the session's own inbox.
        control: { channelDir, reportDir, claudePid: p.pid, route: channel ? "channel" : "inbox" },
      };
    }
    return undefined;
  };
}
