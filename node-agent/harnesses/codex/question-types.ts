/**
 * The shapes of a Codex worker's question and its answer (issue 13 part 4, rules 35 and 39),
 * shared by the sync watcher (codex-questions.ts) and the async reply (codex-async-question.ts).
 */
import type { ToolOutputReceipt } from "./answer-receipt.js";
import type { LedgerState, QuestionKey } from "../../questions/question-ledger.js";

export interface QuestionBinding {
  seat: string;
  occupantId: string;
  paneId?: string | undefined;
  threadId: string;
}

export interface WorkerQuestion extends QuestionKey {
  seat: string;
  occupantId: string;
  paneId?: string | undefined;
  /** The app-server's id for this server request, as a string. */
  requestId: string;
  questions: {
    id: string;
    header: string;
    question: string;
    isOther: boolean;
    options: { label: string; description: string }[] | null;
  }[];
  /** Set for Codex's async question (codex-async-question.ts): answered by a user message, not a server response. */
  async?: { askedAtMs: number } | undefined;
}

export type QuestionAnswers = Record<string, { answers: string[] }>;

export type AnswerOutcome =
  | { result: "delivered"; receipt: ToolOutputReceipt; detail?: string }
  | { result: "unconfirmed"; reason: "answered_concurrently_by_owner"; receipt?: ToolOutputReceipt; detail?: string }
  | { result: "uncertain"; reason: "connection_lost" | "not_resolved" | "no_receipt" | "claim_unreadable" }
  | { result: "not_sent"; reason: "connection_closed" | "refused_by_codex" | "refused_by_harness"; detail?: string }
  | {
      result: "refused";
      reason: "unknown_request" | "bad_answer" | "fenced" | "already_answered";
      detail?: string;
      previous?: LedgerState;
    };

/** What a reconcile proves: an answer outcome, or that no answer was ever claimed (an exact not-sent). */
export type ReconcileOutcome =
  | AnswerOutcome
  | { result: "not_sent"; reason: "no_claim"; detail: string }
  | { result: "refused"; reason: "occupant_changed" };
