/**
 * The guarded Esc's key input for Claude in a tmux pane: identity from tmux, Claude's state
 * and input line read from the pane's screen (as Herdr's screen detection does). Arguments go
 * to tmux as an argv array, never through a shell. Belongs beside panes/tmux.ts as that host's
 * optional key input; kept here until the PaneHost interface grows one.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { PaneAgentStatus } from "../panes/pane-host.js";
import type { PaneKeyInput } from "./claude-stop.js";

const run = promisify(execFile);

/** Claude's prompt box: the lines between the two horizontal rules, the first starting with "❯". */
export function claudeInputLine(screen: string): string | undefined {
  const lines = screen.split("\n");
  const rules = lines.map((l, i) => (/^─{20,}/.test(l.trim()) ? i : -1)).filter((i) => i >= 0);
  if (rules.length < 2) return undefined;
  const body = lines.slice(rules[rules.length - 2]! + 1, rules[rules.length - 1]!);
  if (!body.length || !body[0]!.trimStart().startsWith("❯")) return undefined;
  return [body[0]!.trimStart().slice(1), ...body.slice(1)].join("\n").trim();
}

export function claudeScreenStatus(screen: string): PaneAgentStatus {
  if (/esc to interrupt/i.test(screen)) return "working";
  if (claudeInputLine(screen) !== undefined) return "idle";
  return "unknown";
}

/** Key input on a private tmux server named `socketName`, or on the server at `{ socketPath }` (undefined: the default server). */
export function tmuxClaudeKeys(server: string | { socketPath?: string | undefined }): PaneKeyInput {
  const prefix = typeof server === "string" ? ["-L", server] : server.socketPath ? ["-S", server.socketPath] : [];
  const tmux = async (...args: string[]) => (await run("tmux", [...prefix, ...args], { encoding: "utf8" })).stdout;
  return {
    async paneState(paneId) {
      try {
        const [id, windowId, session] = (await tmux("display-message", "-p", "-t", paneId, "#{pane_id}\t#{window_id}\t#{session_name}")).trim().split("\t");
        if (id !== paneId) return undefined;
        return { paneId, terminalId: windowId!, sessionId: session!, agentStatus: claudeScreenStatus(await tmux("capture-pane", "-p", "-t", paneId)) };
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
