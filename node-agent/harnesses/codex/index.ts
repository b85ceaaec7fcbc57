/** The Codex harness: its app-server adapter with pane discovery, its hire launcher and question watcher. */
import { SeatKind } from "../../../shared/verdicts.js";
import type { HarnessPlugin } from "../plugin.js";
import { CodexAdapter } from "./adapter.js";
import { CodexLauncher } from "./launch.js";
import { codexQuestions } from "./question-watching.js";

export const codexHarness: HarnessPlugin = {
  kind: SeatKind.Codex,
  hire: true,
  questions: codexQuestions,
  start(s) {
    // A Codex TUI this agent's own hire launched is owned (interrupt offered); the journal tells (rules 36, 47).
    const hires = { launched: (id: string) => s.hires.read(id), ofPane: (paneId: string) => s.hires.byPane(paneId) };
    const adapter = new CodexAdapter({ clock: s.clock, paneHost: s.paneHost, proofs: s.proofs, hires });
    return { adapter, launcher: new CodexLauncher(), close: () => adapter.close() };
  },
};
