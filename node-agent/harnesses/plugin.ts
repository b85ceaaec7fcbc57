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
import type { QuestionLedger } from "../questions/question-ledger.js";
import type { HarnessAdapter, SeatRecord } from "./adapter.js";
import type { AnswerOutcome, QuestionAnswers, ReconcileOutcome, WorkerQuestion } from "./codex/question-types.js";

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

/** One seat's native question watcher, as the question desk drives it. */
export interface SeatQuestionWatcher {
  onQuestion(listener: (q: WorkerQuestion) => void): unknown;
  /** Reads what is already pending once the listener is set, where the harness is polled. */
  start?(): Promise<void>;
  answer(requestId: string, answers: QuestionAnswers): Promise<AnswerOutcome>;
  /** Re-reads an earlier answer's native receipt; sends nothing. */
  reconcile(requestId: string): Promise<ReconcileOutcome>;
  close(): void;
}

export type QuestionAttach =
  | { ok: true; watcher: SeatQuestionWatcher }
  | { ok: false; problem: string; message: string };

/** How the question desk watches a harness's seats for workers' questions (issue 13 part 4). */
export interface QuestionWatching {
  /** Whether discovery found where this seat's questions can be watched. */
  watchable(seat: SeatRecord): boolean;
  /** Attaches to the seat's questions; not ok is logged and retried later. */
  attach(seat: SeatRecord, ledger: QuestionLedger): Promise<QuestionAttach>;
}

export interface HarnessPlugin {
  readonly kind: SeatKind;
  /** Whether hire_agent can start it (then start() returns a launcher). */
  readonly hire: boolean;
  start(setup: HarnessSetup): StartedHarness;
  /** Present where the agent watches the harness's native questions itself. */
  readonly questions?: QuestionWatching | undefined;
}
