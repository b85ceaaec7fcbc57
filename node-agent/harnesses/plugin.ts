/**
 * What one harness brings to the agent, as one object in its own folder (issue 33 item 2): its
 * adapter with discovery, its hire launcher, its question watching. registry.ts lists them; the
 * composition root, the hirer and the question desk read that list and never name a harness.
 */
import type { SeatKind } from "../../shared/verdicts.js";
import type { MonotonicClock } from "../proofs/proof.js";
import type { ProofProvider } from "../proofs/provider.js";
import type { PaneHost } from "../panes/pane-host.js";
import type { MailboxStore } from "../mailbox/store.js";
import type { HostJournal } from "../hire/host-journal.js";
import type { HarnessLauncher } from "../hire/launcher.js";
import type { HarnessAdapter, SeatRecord } from "./adapter.js";

/** The agent's folders for harness channels; hires pass the same ones to their panes (hire/launcher.ts). */
export interface HarnessFolders {
  claudeChannelDir: string;
  claudeReportDir: string;
  piSocketDir: string;
  /** Passwords of the OpenCode servers hires started, by port. */
  openCodePasswordDir: string;
}

/** What the agent gives every harness when it starts. */
export interface HarnessSetup {
  clock: MonotonicClock;
  folders: HarnessFolders;
  mailboxes: MailboxStore;
  paneHost?: PaneHost | undefined;
  /** The tmux server the pane host reads, when it is tmux (for key input). */
  tmuxServer?: { socketPath?: string | undefined } | undefined;
  /** The seat binding, checked again just before a stop: the seat book still holds this occupant. */
  stillOccupied: (seat: SeatRecord) => boolean;
  /** This machine's proof provider, shared by every adapter. */
  proofs?: ProofProvider | undefined;
  /** This agent's host journal of hires: a process one of them launched is owned (rules 36, 47). */
  hires: HostJournal;
}

/** One harness as this agent runs it. */
export interface StartedHarness {
  adapter: HarnessAdapter;
  /** Present when hire_agent can start this harness. */
  launcher?: HarnessLauncher | undefined;
  close?(): void | Promise<void>;
}

export interface HarnessPlugin {
  readonly kind: SeatKind;
  /** Whether hire_agent can start it (then start() returns a launcher). */
  readonly hire: boolean;
  start(setup: HarnessSetup): StartedHarness;
}
