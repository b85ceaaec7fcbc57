/**
 * The one interface the delivery pipeline calls for every harness. A new harness is a folder
 * whose plugin (plugin.ts) brings an implementation, plus one line in registry.ts; deliver.ts
 * never changes.
 */
import type { AgentResult, DeliveryMode, SeatKind, SeatStatus } from "../../shared/verdicts.js";
import type { ProofFact } from "../proofs/proof.js";
import type { PaneInfo, PaneProcessInfo } from "../panes/pane-host.js";

/**
 * The facts each harness's seats carry in `control`, by seat kind. Each harness folder adds its
 * own entry by module augmentation (`declare module "../adapter.js" { interface SeatControls { … } }`):
 * this file names no harness and imports none of them (that would be an import cycle).
 */
// biome-ignore lint/suspicious/noEmptyInterface: empty here by design; each harness merges its entry into it.
export interface SeatControls {}

type ControlOf<K extends SeatKind> = K extends keyof SeatControls ? SeatControls[K] : never;

/**
 * A seat as the agent's seat book records it. `control`, typed by `kind`, holds the facts found at
 * discovery (endpoint, home, thread, pids...): not authority, re-proved before each write.
 */
export type SeatRecord = { [K in SeatKind]: SeatFields & { kind: K; control?: ControlOf<K> | undefined } }[SeatKind];

/** A seat of one kind, its control typed. */
export type SeatOf<K extends SeatKind> = Extract<SeatRecord, { kind: K }>;

interface SeatFields {
  name: string;
  title: string;
  /** Stable for one occupant; a different process or session means a different id. */
  occupantId: string;
  createdAtMs: number;
  /** For seats discovered in a pane: which host and pane. Absent for mailbox seats. */
  pane?: { host: "herdr" | "tmux"; paneId: string; terminalId: string; sessionId: string } | undefined;
}

export interface InputCapabilities {
  deliveryModes: ("steer" | "queue")[];
  interrupt: boolean;
  nextTurnOnly: boolean;
}

/** The harness's own evidence that the worker cannot take a turn (issue 35); a seat showing it offers no input. */
export interface CannotWork {
  /** no_model | no_api_key | no_auth | model_unreachable */
  reason: string;
  /** What the harness answered or showed. */
  detail: string;
}

export interface SeatSnapshot {
  status: SeatStatus;
  occupantId: string;
  inputCapabilities: InputCapabilities;
  /** Present only when the harness itself said the worker cannot take a turn. */
  cannotWork?: CannotWork | undefined;
}

export interface NativeWrite {
  deliveryId: string;
  text: string;
  mode: DeliveryMode;
  conversationId: string;
  inReplyTo?: string | undefined;
}

/** A harness's own delivery stage, where its rules define one (OpenCode, rule 41); otherwise the controller derives it from the result. */
export type NativeStage = "stored" | "consumed" | "uncertain" | "unavailable";

export interface NativeWriteResult {
  result: AgentResult;
  deliveryStage?: NativeStage | undefined;
  nativeReceiptId?: string | undefined;
  /** The harness's own id of the message it stored, where it has one (Pi's session entry id, rule 42). */
  nativeMessageId?: string | undefined;
  /** The session file that holds it (Pi's `sessionFile`, rule 42). */
  nativeSessionPath?: string | undefined;
  detail?: string | undefined;
  reason?: string | undefined;
  /** The native channel already held this delivery id; nothing was written again. */
  replayed?: boolean | undefined;
}

export interface SessionEntry {
  deliveryId: string;
  nativeReceiptId: string;
  contentFingerprint: string;
  atMs: number;
}

/** Rule 39: the turn a write joined or waited behind, as the harness shows it now; harnesses without turns say nothing. */
export type WriteTurnState = "terminal" | "active" | "unknown";

export interface SessionRead {
  occupantId: string;
  status: SeatStatus;
  entries: SessionEntry[];
  /** False when part of the session could not be read: a gap, never a verdict. */
  complete: boolean;
  /** The session file read, where the harness keeps one (Pi, rule 42). */
  sessionPath?: string | undefined;
  /** For the delivery asked about: its write's turn (rule 39), where the harness has turn ids (Codex). */
  writeTurn?: WriteTurnState | undefined;
}

export type StopResult = {
  result: "stopped" | "already_finished" | "unsupported" | "uncertain" | "unavailable";
  detail: string;
};

export interface HarnessAdapter {
  readonly kind: SeatKind;
  /** Observe the seat now: its status, occupant and live input capabilities. Fresh proofs come with it. */
  inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }>;
  /** Write one message through the native channel. Called only after the freshness gate passed. */
  write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult>;
  /** What the seat's session holds, for reconciliation; `deliveryId` asks for that write's turn too (rule 39). */
  readSession(seat: SeatRecord, sinceMs: number, deliveryId?: string): Promise<SessionRead>;
  /** Recognise this harness in a pane from its processes (never from titles or files). */
  discover?(pane: PaneInfo, processes: PaneProcessInfo): Promise<SeatRecord | undefined>;
  /** Stop the occupant's current turn through the native channel; only seats advertising `interrupt`. */
  stop?(seat: SeatRecord): Promise<StopResult>;
  /**
   * Follow the turn a write started on a fresh session (a hire's brief, issue 35), where the harness's
   * native channel tells whether it reached its model: a refusal it reports (Codex's `error` event) or the
   * model's answer. Called after the write; closed after.
   */
  followTurn?(seat: SeatRecord): Promise<TurnFollower | undefined>;
}

/** What the harness says of one turn: its refusal, once it came, or whether the model has answered in it. */
export interface TurnFollower {
  refused(): CannotWork | undefined;
  answered(): boolean;
  close(): void;
}
