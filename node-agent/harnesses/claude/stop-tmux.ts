/**
 * The guarded Esc's key input for Claude in a tmux pane: identity from tmux, Claude's state
 * and input line read from the pane's screen (claude-screen.ts, as Herdr's screen detection
 * does). Arguments go to tmux as an argv array, never through a shell.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { PaneKeyInput } from "./stop.js";
import { claudeInputLine, claudeScreenStatus } from "./screen.js";

const run = promisify(execFile);

/** Key input on a private tmux server named `socketName`, or on the server at `{ socketPath }` (undefined: the default server). */
export function tmuxClaudeKeys(server: string | { socketPath?: string | undefined }): PaneKeyInput {
  const prefix = typeof server === "string" ? ["-L", server] : server.socketPath ? ["-S", server.socketPath] : [];
  const tmux = async (...args: string[]) => (await run("tmux", [...prefix, ...args], { encoding: "utf8" })).stdout;
  return {
    async paneState(paneId) {
      try {
        const [id, windowId, session] = (
          await tmux("display-message", "-p", "-t", paneId, "#{pane_id}\t#{window_id}\t#{session_name}")
        )
          .trim()
          .split("\t");
        if (id !== paneId) return undefined;
        return {
          paneId,
          terminalId: windowId!,
          sessionId: session!,
          agentStatus: claudeScreenStatus(await tmux("capture-pane", "-p", "-t", paneId)),
        };
      } catch {
        return undefined;
      }
    },
    async inputLine(paneId) {
      try {
        return claudeInputLine(await tmux("capture-pane", "-p", "-t", paneId));
      } catch {
        return undefined;
      }
    },
    async pressEscape(paneId) {
      await tmux("send-keys", "-t", paneId, "Escape");
    },
  };
}
