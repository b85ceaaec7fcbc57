/** The question desk's watcher on an OpenCode seat: its own loopback server, polled (issue 13 part 4). */
import type { QuestionWatching } from "../plugin.js";
import { OpenCodeQuestionWatcher, openCodeTarget } from "./questions.js";

export const openCodeQuestions: QuestionWatching = {
  watchable: (seat) => openCodeTarget(seat) !== undefined,
  async attach(seat, ledger) {
    const w = await OpenCodeQuestionWatcher.attach(seat, ledger);
    if (!w.ok) return { ok: false, problem: "OpenCode session unreachable", message: w.message };
    const watcher = w.watcher;
    return {
      ok: true,
      watcher: {
        onQuestion: (listener) => watcher.onQuestion(listener),
        start: () => watcher.poll(),
        answer: (requestId, answers) => watcher.answer(requestId, answers),
        reconcile: (requestId) => watcher.reconcile(requestId),
        close: () => watcher.close(),
      },
    };
  },
};
