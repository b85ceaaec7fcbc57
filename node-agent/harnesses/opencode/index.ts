/** The OpenCode harness: its loopback-server adapter with discovery, its hire launcher and question watcher. */
import { SeatKind } from "../../../shared/verdicts.js";
import type { HarnessPlugin } from "../plugin.js";
import { OpenCodeAdapter } from "./adapter.js";
import { OpenCodeLauncher } from "./launch.js";
import { withHiredOpenCodePassword } from "./password.js";
import { openCodeQuestions } from "./question-watching.js";

export const openCodeHarness: HarnessPlugin = {
  kind: SeatKind.OpenCode,
  hire: true,
  questions: openCodeQuestions,
  start(s) {
    const adapter = new OpenCodeAdapter({ clock: s.clock });
    // A server a hire started has a password only the hire's folder knows.
    adapter.discover = withHiredOpenCodePassword(adapter.discover, s.folders.openCodePasswordDir);
    return { adapter, launcher: new OpenCodeLauncher(s.folders.openCodePasswordDir) };
  },
};
