/**
 * The harnesses this agent runs: THE one list of plugins. Adding a harness is a new folder
 * exporting its plugin and one line in HARNESSES; the agent, the hirer and discovery read it.
 * (The wire names, shared/verdicts.ts and the proto's SeatKind enum, stay a contract of their own.)
 */
import type { SeatKind } from "../../shared/verdicts.js";
import type { HarnessAdapter } from "./adapter.js";
import type { HarnessPlugin } from "./plugin.js";
import { claudeHarness } from "./claude/index.js";
import { codexHarness } from "./codex/index.js";
import { mailboxHarness } from "./mailbox/index.js";
import { openCodeHarness } from "./opencode/index.js";
import { piHarness } from "./pi/index.js";

export const HARNESSES: readonly HarnessPlugin[] = [
  mailboxHarness,
  codexHarness,
  claudeHarness,
  openCodeHarness,
  piHarness,
];

/** The kinds hire_agent can start, in registry order. */
export function hireKinds(plugins: readonly HarnessPlugin[] = HARNESSES): SeatKind[] {
  return plugins.filter((p) => p.hire).map((p) => p.kind);
}

/** Which adapter serves which seat kind. */
export class AdapterRegistry {
  private readonly byKind = new Map<SeatKind, HarnessAdapter>();

  register(adapter: HarnessAdapter): this {
    this.byKind.set(adapter.kind, adapter);
    return this;
  }

  get(kind: SeatKind): HarnessAdapter | undefined {
    return this.byKind.get(kind);
  }

  /** Every adapter, in registration order (the order discovery asks them about a pane). */
  all(): HarnessAdapter[] {
    return [...this.byKind.values()];
  }
}
