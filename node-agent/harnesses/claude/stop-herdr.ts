/**
 * The guarded Esc's key input for Claude in a Herdr pane: identity and Claude's state from
 * `pane.get` (Herdr's own screen detection), the input line from `pane.read` of the visible
 * screen, and the one `esc` through HerdrPaneHost.pressEscape — the only key Herdr is ever
 * sent, and only from createGuardedEscStop's checks (claude-stop.ts).
 */
import type { HerdrPaneHost } from "../../panes/herdr.js";
import type { PaneKeyInput } from "./stop.js";
import { claudeInputLine } from "./screen.js";

export function herdrClaudeKeys(host: HerdrPaneHost): PaneKeyInput {
  return {
    async paneState(paneId) {
      try {
        const pane = await host.getPane(paneId);
        return pane
          ? {
              paneId: pane.paneId,
              terminalId: pane.terminalId,
              sessionId: pane.sessionId,
              agentStatus: pane.agentStatus,
            }
          : undefined;
      } catch {
        return undefined;
      }
    },
    async inputLine(paneId) {
      try {
        return claudeInputLine(await host.readVisible(paneId));
      } catch {
        return undefined;
      }
    },
    async pressEscape(paneId) {
      await host.pressEscape(paneId);
    },
  };
}
