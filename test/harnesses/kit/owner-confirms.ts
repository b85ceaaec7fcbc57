/**
 * TEST-ONLY: plays the owner at the terminal of a hired Claude pane, confirming the
 * development-channel prompt once per pane (the product never answers it).
 */
import { execFileSync } from "node:child_process";
import type { HireFleet } from "../../kit/hire-fleet.js";

/** The owner at the terminal: confirms the development-channel prompt once per pane. */
export function ownerConfirmsDevChannel(fleet: HireFleet): () => void {
  const answered = new Set<string>();
  const timer = setInterval(() => {
    for (const p of fleet.panes()) {
      if (answered.has(p.paneId) || !p.hire) continue;
      try {
        const screen = execFileSync("tmux", ["-S", fleet.tmuxSocket, "capture-pane", "-p", "-t", p.paneId], {
          encoding: "utf8",
        });
        if (/local development/i.test(screen)) {
          execFileSync("tmux", ["-S", fleet.tmuxSocket, "send-keys", "-t", p.paneId, "Enter"]);
          answered.add(p.paneId);
        }
      } catch {
        // the pane went away
      }
    }
  }, 200);
  return () => clearInterval(timer);
}
