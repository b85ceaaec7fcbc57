/**
 * The question desk's watcher on a Codex seat (issue 13 part 4): on the agent's own connection to
 * the seat's app-server (the owner's TUI keeps its own), resuming the seat's thread.
 */
import { SeatKind } from "../../../shared/verdicts.js";
import type { SeatRecord } from "../adapter.js";
import type { QuestionWatching } from "../plugin.js";
import { CodexConnection } from "./connection.js";
import { CodexQuestionWatcher } from "./questions.js";

/** Where a Codex seat's questions can be watched: its app-server and thread, when discovery found both. */
function codexTarget(seat: SeatRecord): { endpoint: string; threadId: string } | undefined {
  if (seat.kind !== SeatKind.Codex) return undefined;
  const c = seat.control;
  return typeof c?.endpoint === "string" && typeof c.threadId === "string"
    ? { endpoint: c.endpoint, threadId: c.threadId }
    : undefined;
}

export const codexQuestions: QuestionWatching = {
  watchable: (seat) => codexTarget(seat) !== undefined,
  async attach(seat, ledger) {
    const t = codexTarget(seat);
    if (!t) return { ok: false, problem: "no app-server and thread", message: `seat ${seat.name} has none recorded` };
    const opened = await CodexConnection.open(t.endpoint, { clientName: "clankie_questions" });
    if (!opened.ok) return { ok: false, problem: "app-server unreachable", message: opened.message };
    const binding = { seat: seat.name, occupantId: seat.occupantId, paneId: seat.pane?.paneId, threadId: t.threadId };
    const w = await CodexQuestionWatcher.attach(opened.connection, binding, ledger);
    if (!w.ok) {
      opened.connection.close();
      return { ok: false, problem: "thread not resumable", message: w.message };
    }
    const watcher = w.watcher;
    return {
      ok: true,
      watcher: {
        onQuestion: (listener) => watcher.onQuestion(listener),
        answer: (requestId, answers) => watcher.answer(requestId, answers),
        reconcile: (requestId) => watcher.reconcileRequest(requestId),
        close: () => {
          watcher.close();
          opened.connection.close();
        },
      },
    };
  },
};
