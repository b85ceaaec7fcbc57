/**
 * The Claude harness: its channel adapter with discovery, the guarded Esc stop where the pane host
 * has key input, and its hire launcher. Its channel sockets and session reports live under the
 * agent's state dir (the worker's `clankie worker claude-channel --channel-dir` and hook
 * `--report-dir` must name the same folders); busy/idle comes from the pane host when it has a view.
 */
import { SeatKind } from "../../../shared/verdicts.js";
import { HerdrPaneHost } from "../../panes/herdr.js";
import type { HarnessPlugin } from "../plugin.js";
import { ClaudeAdapter } from "./adapter.js";
import { createClaudeDiscover } from "./discover.js";
import { ClaudeLauncher } from "./launch.js";
import { createGuardedEscStop } from "./stop.js";
import { herdrClaudeKeys } from "./stop-herdr.js";
import { tmuxClaudeKeys } from "./stop-tmux.js";

export const claudeHarness: HarnessPlugin = {
  kind: SeatKind.Claude,
  hire: true,
  start(s) {
    const paneHost = s.paneHost;
    const paneKeys =
      paneHost instanceof HerdrPaneHost
        ? herdrClaudeKeys(paneHost)
        : paneHost?.kind === "tmux" && s.tmuxServer
          ? tmuxClaudeKeys(s.tmuxServer)
          : undefined;
    const adapter = new ClaudeAdapter({
      clock: s.clock,
      paneStatus: paneHost
        ? async (seat) =>
            seat.pane
              ? (await paneHost.listPanes()).find((p) => p.paneId === seat.pane!.paneId)?.agentStatus
              : undefined
        : undefined,
      proofs: s.proofs,
      discover: createClaudeDiscover(s.folders.claudeChannelDir, s.folders.claudeReportDir, s.proofs),
      // Stop is the one guarded Esc, offered only where the pane host has key input (Herdr, tmux).
      stopper: paneKeys
        ? createGuardedEscStop({ keys: paneKeys, recheckAuthority: async (seat) => s.stillOccupied(seat) })
        : undefined,
    });
    return { adapter, launcher: new ClaudeLauncher() };
  },
};
