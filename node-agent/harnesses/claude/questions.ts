/**
 * A Claude Code worker's informational questions (issue 13 part 4, rule 35: "questions go via
 * plugin hooks bound to pane, session and tool call; answers are hook JSON, never keys").
 * Claude's question tool is AskUserQuestion. Its PreToolUse hook (`clankie worker
 * question-hook`, worker/claude-question-hook.ts) holds the tool call open on the
 * agent's worker socket; the agent has proved from the kernel that the caller runs in the
 * seat's pane under that seat's Claude process, and checks the session is the seat's current
 * one. The question is filed for the exact hiring conversation; the lead's answer goes back
 * down the hook's connection, and the hook prints it as `permissionDecision:"allow"` with
 * `updatedInput.answers` (2.1.197: "Hook satisfied user interaction ... via updatedInput").
 *
 * While the hook waits, Claude shows no dialog. When the hook lets go (its bounded wait ended,
 * or the owner interrupted) the question is the owner's again in the TUI. So an answer is
 * `delivered` only when the transcript's tool_result for that tool_use id carries it; the
 * owner's answer there, or a hook already gone before we sent, is `unconfirmed` /
 * `answered_concurrently_by_owner`; a send with no receipt is `uncertain` and the ledger then
 * refuses any second answer. Permission prompts and folder trust never come here: the hook
 * matches AskUserQuestion alone.
 */
import type { SeatRecord } from "../adapter.js";
import { readSessionReport } from "./session-report.js";
import { SeatKind } from "../../../shared/verdicts.js";
import { readClaudeAnswerReceipt, type ClaudeAnswerReceipt } from "./answer-receipt.js";
import { sameAnswers, type ToolOutputReceipt } from "../codex/answer-receipt.js";
import { badAnswer, type AnswerOutcome, type QuestionAnswers, type WorkerQuestion } from "../codex/questions.js";
import type { ReconcileOutcome } from "../codex/question-types.js";
import type { LedgerState, QuestionLedger } from "../../questions/question-ledger.js";

export const CLAUDE_QUESTION_TOOL = "AskUserQuestion";
const MAX_REMEMBERED = 256;
/** How long the transcript may lag the hook's answer before the send is judged uncertain. */
const RECEIPT_WAIT_MS = 15_000;

/** What the hook tells the agent: the exact tool call and its questions, as Claude gave them. */
export interface ClaudeAsk {
  sessionId: string;
  promptId: string;
  toolUseId: string;
  questions: {
    question: string;
    header: string;
    options: { label: string; description: string }[];
    multiSelect: boolean;
  }[];
}

/** The hook's open connection: one reply line, written once. */
export interface HookLine {
  isOpen(): boolean;
  /** True once the line was handed to the kernel; false when the connection was already gone or failed. */
  send(body: Record<string, unknown>): Promise<boolean>;
  onClose(listener: () => void): void;
}

export type FileQuestion = (q: WorkerQuestion) => Promise<{ filed: boolean; reason: string }>;

interface Pending {
  q: WorkerQuestion;
  transcriptPath: string;
  line: HookLine;
  withdrawn: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type { ReconcileOutcome } from "../codex/question-types.js";

/** Claude's own shape: each question's text → its answer (several joined as Claude joins a multi-select). */
function nativeAnswers(q: WorkerQuestion, answers: QuestionAnswers): Record<string, string> {
  return Object.fromEntries(q.questions.map((x) => [x.question, answers[x.id]!.answers.join(", ")]));
}

export class ClaudeQuestionBoard {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly ledger: QuestionLedger,
    private readonly file: FileQuestion,
  ) {}

  private static keyOf(seat: string, requestId: string): string {
    return `${seat}\0${requestId}`;
  }

  /** Takes the hook's question: refused at once (the hook lets the owner answer), or held open until answered or withdrawn. */
  async ask(seat: SeatRecord, callerPids: ReadonlySet<number>, a: ClaudeAsk, line: HookLine): Promise<void> {
    const refuse = (reason: string, detail: string) => void line.send({ ok: false, reason, detail });
    const c = seat.kind === SeatKind.Claude ? seat.control : undefined;
    if (seat.kind !== SeatKind.Claude || typeof c?.claudePid !== "number" || typeof c.reportDir !== "string")
      return refuse("not_a_claude_seat", `seat ${seat.name} is not a Claude seat`);
    // Bound to the seat's own Claude process and its current session, not only to the pane.
    if (!callerPids.has(c.claudePid))
      return refuse("not_this_claude", `the caller does not run under seat ${seat.name}'s Claude process`);
    if (!seat.occupantId.endsWith(`:${a.sessionId}`))
      return refuse("session_changed", `session ${a.sessionId} is not seat ${seat.name}'s current session`);
    const report = readSessionReport(c.reportDir, c.claudePid);
    if (report?.sessionId !== a.sessionId)
      return refuse(
        "no_transcript",
        "the agent knows no transcript for this session: no answer could be proved, so none is offered",
      );
    const q: WorkerQuestion = {
      seat: seat.name,
      occupantId: seat.occupantId,
      paneId: seat.pane?.paneId,
      threadId: a.sessionId,
      // The controller needs a non-empty turn id; a hook input without prompt_id still names its tool call.
      turnId: a.promptId || "no-prompt-id",
      itemId: a.toolUseId,
      requestId: a.toolUseId,
      questions: a.questions.map((x, i) => ({
        id: `q${i + 1}`,
        header: x.header,
        question: x.multiSelect ? `${x.question} (several may be chosen)` : x.question,
        isOther: true,
        options: x.options,
      })),
    };
    // One answer per tool call, across agent restarts: a claim already taken is never offered again.
    if (this.ledger.read(q) !== undefined)
      return refuse("already_claimed", "this tool call already has an answer claim");
    const key = ClaudeQuestionBoard.keyOf(seat.name, q.requestId);
    // The lead reads the annotated text; the answer is keyed by Claude's own question text.
    const p: Pending = {
      q: { ...q, questions: q.questions.map((x, i) => ({ ...x, question: a.questions[i]!.question })) },
      transcriptPath: report.transcriptPath,
      line,
      withdrawn: false,
    };
    this.pending.set(key, p);
    if (this.pending.size > MAX_REMEMBERED) this.pending.delete(this.pending.keys().next().value!);
    line.onClose(() => (p.withdrawn = true));
    const filed = await this.file(q);
    if (!filed.filed) {
      this.pending.delete(key);
      return refuse(
        filed.reason || "not_filed",
        "the question was not filed for a lead: it stays with the owner in the pane",
      );
    }
  }

  has(seatName: string, requestId: string): boolean {
    return this.pending.has(ClaudeQuestionBoard.keyOf(seatName, requestId));
  }

  /** The lead's answer as hook JSON; see the file comment for what each outcome proves. */
  async answer(
    seatName: string,
    occupantId: string,
    requestId: string,
    answers: QuestionAnswers,
    o: { receiptWaitMs?: number } = {},
  ): Promise<AnswerOutcome | { result: "refused"; reason: "occupant_changed" }> {
    const p = this.pending.get(ClaudeQuestionBoard.keyOf(seatName, requestId));
    if (!p) return { result: "refused", reason: "unknown_request" };
    if (p.q.occupantId !== occupantId) return { result: "refused", reason: "occupant_changed" };
    const bad = badAnswer(p.q, answers);
    if (bad) return { result: "refused", reason: "bad_answer", detail: bad };
    const answerJson = JSON.stringify({ answers });
    const claim = this.ledger.claim(p.q, answerJson, Date.now());
    if (!claim.ok) {
      if ("unreadable" in claim) return { result: "refused", reason: "fenced", detail: claim.unreadable };
      const s = claim.existing.state;
      return {
        result: "refused",
        reason: s === "sending" || s === "uncertain" ? "fenced" : "already_answered",
        previous: claim.existing,
      };
    }
    const native = nativeAnswers(p.q, answers);
    const nativeJson = JSON.stringify(native);
    const waitMs = o.receiptWaitMs ?? RECEIPT_WAIT_MS;
    if (p.withdrawn || !p.line.isOpen()) {
      // The hook let go before this answer: the question is the owner's in the TUI, and nothing of
      // ours was sent. The receipt, when the owner has answered by now, names what the model got.
      const r = await this.receipt(p, waitMs);
      return this.finish(p, answerJson, {
        result: "unconfirmed",
        reason: "answered_concurrently_by_owner",
        ...(r ? { receipt: this.wire(p, r) } : {}),
      });
    }
    const sent = await p.line.send({ ok: true, answers: native });
    if (!sent) return this.finish(p, answerJson, { result: "uncertain", reason: "connection_lost" });
    const r = await this.receipt(p, waitMs);
    if (!r) return this.finish(p, answerJson, { result: "uncertain", reason: "no_receipt" });
    const ours = r.answers !== undefined && sameAnswers(JSON.stringify(r.answers), nativeJson);
    return this.finish(
      p,
      answerJson,
      ours
        ? { result: "delivered", receipt: this.wire(p, r) }
        : { result: "unconfirmed", reason: "answered_concurrently_by_owner", receipt: this.wire(p, r) },
    );
  }

  /** Re-reads the receipt for this question's claim and settles what it proves; sends nothing. */
  async reconcile(seatName: string, occupantId: string, requestId: string): Promise<ReconcileOutcome> {
    const p = this.pending.get(ClaudeQuestionBoard.keyOf(seatName, requestId));
    if (!p) return { result: "refused", reason: "unknown_request" };
    if (p.q.occupantId !== occupantId) return { result: "refused", reason: "occupant_changed" };
    const s = this.ledger.read(p.q);
    if (s === undefined)
      return {
        result: "not_sent",
        reason: "no_claim",
        detail: "no answer was ever claimed for this question, so none was sent",
      };
    if ("unreadable" in s) return { result: "uncertain", reason: "claim_unreadable" };
    const r = await this.receipt(p, 0);
    if (s.state === "delivered")
      return {
        result: "delivered",
        receipt: r ? this.wire(p, r) : { callId: p.q.itemId, turnId: p.q.turnId, output: s.answerJson },
      };
    if (s.state === "unconfirmed")
      return { result: "unconfirmed", reason: s.reason, ...(r ? { receipt: this.wire(p, r) } : {}) };
    if (s.state === "not_sent") return { result: "not_sent", reason: "connection_closed" };
    if (!r) return { result: "uncertain", reason: "no_receipt" };
    const sent = (JSON.parse(s.answerJson) as { answers: QuestionAnswers }).answers;
    const ours =
      r.answers !== undefined && sameAnswers(JSON.stringify(r.answers), JSON.stringify(nativeAnswers(p.q, sent)));
    return this.finish(
      p,
      s.answerJson,
      ours
        ? { result: "delivered", receipt: this.wire(p, r) }
        : { result: "unconfirmed", reason: "answered_concurrently_by_owner", receipt: this.wire(p, r) },
    );
  }

  /** The transcript's tool_result for the call; Claude writes it as the turn goes on, so it may lag a little. */
  private async receipt(p: Pending, waitMs: number): Promise<ClaudeAnswerReceipt | undefined> {
    for (const end = Date.now() + waitMs; ; await sleep(100)) {
      const r = readClaudeAnswerReceipt(p.transcriptPath, p.q.itemId);
      if (r || Date.now() >= end) return r;
    }
  }

  /** The receipt in the shape the agent service reports: the tool call, its prompt, what the model got. */
  private wire(p: Pending, r: ClaudeAnswerReceipt): ToolOutputReceipt {
    return { callId: r.toolUseId, turnId: p.q.turnId, output: r.answers ? JSON.stringify(r.answers) : r.content };
  }

  private finish(p: Pending, answerJson: string, o: AnswerOutcome): AnswerOutcome {
    const atMs = Date.now();
    const s: LedgerState | undefined =
      o.result === "delivered"
        ? { state: "delivered", answerJson, atMs }
        : o.result === "unconfirmed"
          ? { state: "unconfirmed", reason: o.reason, answerJson, winningOutput: o.receipt?.output, atMs }
          : o.result === "uncertain"
            ? { state: "uncertain", reason: o.reason, answerJson, atMs }
            : undefined;
    if (s) this.ledger.settle(p.q, s);
    return o;
  }
}
