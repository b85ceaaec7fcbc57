/** Builds the configured pane host (Herdr, tmux) or none; the agent's only place that chooses one. */
import type { PaneHostConfig } from "../config.js";
import type { PaneHost } from "./pane-host.js";
import { HerdrPaneHost } from "./herdr.js";
import { TmuxPaneHost } from "./tmux.js";

export type ClosablePaneHost = PaneHost & { close?(): void };

export function createPaneHost(c: PaneHostConfig): ClosablePaneHost | undefined {
  if (c.kind === "herdr") return new HerdrPaneHost({ socketPath: c.socketPath, sessionName: c.sessionName });
  if (c.kind === "tmux") return new TmuxPaneHost({ socketPath: c.socketPath });
  return undefined;
}
