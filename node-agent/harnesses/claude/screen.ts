/**
 * Reading Claude Code's screen, for the guarded Esc only: whether it shows a turn running
 * ("esc to interrupt") and what its input line holds. Pure text in, so every pane host that
 * can show the screen (tmux capture-pane, Herdr pane.read) reads it the same way.
 */
import type { PaneAgentStatus } from "../../panes/pane-host.js";

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
