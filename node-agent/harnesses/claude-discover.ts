/**
 * Recognising an interactive Claude Code in a pane: a foreground `claude` process (never
 * print mode) whose Clankie channel socket exists in this agent's channel directory under
 * that process's pid. Anything less is not a seat: a saved session id confers nothing.
 */
import { existsSync } from "node:fs";
import { SeatKind } from "../../shared/verdicts.js";
import type { PaneInfo, PaneProcessInfo } from "../panes/pane-host.js";
import type { SeatRecord } from "./adapter.js";

export function createClaudeDiscover(channelDir: string, reportDir: string) {
  return async (pane: PaneInfo, processes: PaneProcessInfo): Promise<SeatRecord | undefined> => {
    for (const p of processes.foregroundProcesses) {
      const isClaude = p.argv.slice(0, 2).some((a) => /(^|\/)(claude|claude\.exe)$/.test(a));
      if (!isClaude || p.argv.includes("-p") || p.argv.includes("--print")) continue;
      if (!existsSync(`${channelDir}/claude-${p.pid}.sock`)) continue;
      return {
        name: `claude-${pane.paneId.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^-+/, "")}`,
        kind: SeatKind.Claude,
        title: pane.title,
        occupantId: `claude:${p.pid}`,
        createdAtMs: Date.now(),
        control: { channelDir, reportDir, claudePid: p.pid },
      };
    }
    return undefined;
  };
}
