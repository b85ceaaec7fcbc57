/**
 * An OpenCode worker's informational questions (issue 13 part 4, rules 35 and 39; ADR 0050
 * addendum "OpenCode questions"). The watcher reads the seat's own loopback server (the
 * adapter's proven endpoint and password) for pending requests of OpenCode's native `question`
 * tool in the seat's session, binds each to seat, occupant, session, message, tool call and
 * request id, and surfaces it once. The lead's answer is that request's native reply
 * (`POST /question/{id}/reply`), sent once under the ledger's exclusive claim.
 *
 * The owner's TUI shows the same request and may answer first; the server takes one reply and
 * refuses the next (404). So an answer is `delivered` only when the question's tool part shows
 * our answers (`state.metadata.answers`, what the model was given); a 404 or a part carrying
 * other answers is `unconfirmed` / `answered_concurrently_by_owner`; a reply whose answer was
 * lost, or no receipt in time, is `uncertain` and the ledger refuses any second answer until
 * reconcile re-reads the part. Permission prompts (`permission.*`) are never read here.
 */
import { SeatKind } from "../../../shared/verdicts.js";
import type { SeatRecord } from "../adapter.js";
import { callOpenCode } from "./http.js";
import { openCodeControl, openCodeEndpoint, type OpenCodeControl } from "./control.js";
import { directoryQuery, probeOpenCode, type OpenCodeCall } from "./probe.js";
import {
  pendingQuestions,
  readQuestionPart,
  replyQuestion,
  type OpenCodeQuestionPart,
  type OpenCodeQuestionRequest,
} from "./question-api.js";
import { badAnswer, type AnswerOutcome, type QuestionAnswers, type WorkerQuestion } from "../codex/questions.js";
import type { ReconcileOutcome } from "../codex/question-types.js";
import type { ToolOutputReceipt } from "../codex/answer-receipt.js";
import type { LedgerState, QuestionLedger } from "../../questions/question-ledger.js";

const MAX_REMEMBERED = 256;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface OpenCodeWatchOptions {
  pollMs?: number;
  requestTimeoutMs?: number;
  /** How long the tool part may lag an accepted reply before the answer is judged uncertain. */
  receiptWaitMs?: number;
}

/** A seat whose questions can be watched: an OpenCode seat with a known server and session. */
export function openCodeTarget(seat: SeatRecord): OpenCodeControl | undefined {
  if (seat.kind !== SeatKind.OpenCode) return undefined;
  try {
    return openCodeControl(seat);
  } catch {
    return undefined;
  }
}

/** OpenCode's reply shape: one array of answers per question, in the question's order. */
export function nativeOpenCodeAnswers(q: WorkerQuestion, answers: QuestionAnswers): string[][] {
  return q.questions.map((x) => [...answers[x.id]!.answers]);
}

function sameNative(a: string[][] | undefined, b: string[][]): boolean {
  return a !== undefined && JSON.stringify(a) === JSON.stringify(b);
}

/** The request as the lead reads it: questions q1..qN; a free answer unless OpenCode says `custom: false`. */
export function questionOf(seat: SeatRecord, r: OpenCodeQuestionRequest): WorkerQuestion {
  return {
    seat: seat.name,
    occupantId: seat.occupantId,
    paneId: seat.pane?.paneId,
    threadId: r.sessionID,
    turnId: r.tool.messageID,
    itemId: r.tool.callID,
    requestId: r.id,
    questions: r.questions.map((x, i) => ({
      id: `q${i + 1}`,
      header: String(x.header ?? ""),
      question: x.multiple ? `${x.question} (several may be chosen)` : String(x.question),
      isOther: x.custom !== false,
      options: Array.isArray(x.options)
        ? x.options.map((o) => ({ label: String(o?.label ?? ""), description: String(o?.description ?? "") }))
        : null,
    })),
  };
}

export class OpenCodeQuestionWatcher {
  private readonly tracked = new Map<string, { q: WorkerQuestion; open: boolean }>();
  private readonly listeners = new Set<(q: WorkerQuestion) => void>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  private constructor(
    private readonly seat: SeatRecord,
    private readonly call: OpenCodeCall,
    private readonly sessionId: string,
    private readonly dirQuery: string,
    private readonly ledger: QuestionLedger,
    private readonly o: Required<OpenCodeWatchOptions>,
  ) {}

  /** Proves the seat's session on its server (and learns its directory), then starts watching. */
  static async attach(
    seat: SeatRecord,
    ledger: QuestionLedger,
    options: OpenCodeWatchOptions = {},
  ): Promise<{ ok: true; watcher: OpenCodeQuestionWatcher } | { ok: false; message: string }> {
    const control = openCodeTarget(seat);
    if (!control) return { ok: false, message: `seat ${seat.name} has no OpenCode endpoint` };
    const o = {
      pollMs: options.pollMs ?? 500,
      requestTimeoutMs: options.requestTimeoutMs ?? 5000,
      receiptWaitMs: options.receiptWaitMs ?? 10_000,
    };
    const call: OpenCodeCall = (method, path, body) =>
      callOpenCode(openCodeEndpoint(control), { method, path, body, timeoutMs: o.requestTimeoutMs });
    const p = await probeOpenCode(call, control);
    if (!p.ok) return { ok: false, message: p.detail };
    const w = new OpenCodeQuestionWatcher(seat, call, control.sessionId, directoryQuery(p), ledger, o);
    w.timer = setInterval(() => void w.poll(), o.pollMs);
    w.timer.unref();
    return { ok: true, watcher: w };
  }

  onQuestion(listener: (q: WorkerQuestion) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  has(requestId: string): boolean {
    return this.tracked.has(requestId);
  }

  /** Reads the pending requests once: a new one is surfaced, one no longer pending is closed. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const pending = await pendingQuestions(this.call, this.sessionId, this.dirQuery);
      if (!pending) return;
      const ids = new Set(pending.map((r) => r.id));
      for (const t of this.tracked.values()) if (!ids.has(t.q.requestId)) t.open = false;
      for (const r of pending) {
        if (this.tracked.has(r.id)) continue;
        const q = questionOf(this.seat, r);
        this.tracked.set(r.id, { q, open: true });
        if (this.tracked.size > MAX_REMEMBERED) this.tracked.delete(this.tracked.keys().next().value!);
        for (const l of this.listeners) l(q);
      }
    } finally {
      this.polling = false;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The lead's answer as the native reply; see the file comment for what each outcome proves. */
  async answer(requestId: string, answers: QuestionAnswers): Promise<AnswerOutcome> {
    const t = this.tracked.get(requestId);
    if (!t) return { result: "refused", reason: "unknown_request" };
    const bad = badAnswer(t.q, answers);
    if (bad) return { result: "refused", reason: "bad_answer", detail: bad };
    const answerJson = JSON.stringify({ answers });
    const claim = this.ledger.claim(t.q, answerJson, Date.now());
    if (!claim.ok) {
      if ("unreadable" in claim) return { result: "refused", reason: "fenced", detail: claim.unreadable };
      const s = claim.existing.state;
      return {
        result: "refused",
        reason: s === "sending" || s === "uncertain" ? "fenced" : "already_answered",
        previous: claim.existing,
      };
    }
    const native = nativeOpenCodeAnswers(t.q, answers);
    const sent = await replyQuestion(this.call, requestId, native, this.dirQuery);
    t.open = false;
    if (sent.sent === "not_connected") {
      t.open = true;
      return this.finish(t.q, answerJson, { result: "not_sent", reason: "connection_closed" });
    }
    if (sent.sent === "refused") {
      t.open = true;
      return this.finish(t.q, answerJson, { result: "not_sent", reason: "refused_by_harness", detail: sent.detail });
    }
    if (sent.sent === "lost") return this.finish(t.q, answerJson, { result: "uncertain", reason: "connection_lost" });
    if (sent.sent === "gone") {
      // Answered (or dismissed) before ours arrived: nothing of ours was taken.
      const part = await this.receipt(t.q, this.o.receiptWaitMs);
      return this.finish(t.q, answerJson, {
        result: "unconfirmed",
        reason: "answered_concurrently_by_owner",
        ...(part ? { receipt: this.wire(t.q, part) } : {}),
        detail:
          "OpenCode no longer held this question when our reply arrived (404): someone else answered it first; ours was not taken",
      });
    }
    const part = await this.receipt(t.q, this.o.receiptWaitMs);
    if (!part) return this.finish(t.q, answerJson, { result: "uncertain", reason: "no_receipt" });
    return this.finish(t.q, answerJson, this.judge(t.q, part, native));
  }

  /** Re-reads the tool part for this question's claim and settles what it proves; sends nothing. */
  async reconcile(requestId: string): Promise<ReconcileOutcome> {
    const t = this.tracked.get(requestId);
    if (!t) return { result: "refused", reason: "unknown_request" };
    const s = this.ledger.read(t.q);
    if (s === undefined)
      return {
        result: "not_sent",
        reason: "no_claim",
        detail: "no answer was ever claimed for this question, so none was sent",
      };
    if ("unreadable" in s) return { result: "uncertain", reason: "claim_unreadable" };
    if (s.state === "not_sent") return { result: "not_sent", reason: "connection_closed" };
    const part = await this.receipt(t.q, 0);
    if (s.state === "delivered")
      return {
        result: "delivered",
        receipt: part ? this.wire(t.q, part) : { callId: t.q.itemId, turnId: t.q.turnId, output: s.answerJson },
      };
    if (s.state === "unconfirmed")
      return { result: "unconfirmed", reason: s.reason, ...(part ? { receipt: this.wire(t.q, part) } : {}) };
    if (!part) return { result: "uncertain", reason: "no_receipt" };
    const sent = (JSON.parse(s.answerJson) as { answers: QuestionAnswers }).answers;
    return this.finish(t.q, s.answerJson, this.judge(t.q, part, nativeOpenCodeAnswers(t.q, sent)));
  }

  private judge(q: WorkerQuestion, part: OpenCodeQuestionPart, native: string[][]): AnswerOutcome {
    const receipt = this.wire(q, part);
    return sameNative(part.answers, native)
      ? {
          result: "delivered",
          receipt,
          detail: `the question tool part (message ${q.turnId}, call ${q.itemId}) carries this answer`,
        }
      : {
          result: "unconfirmed",
          reason: "answered_concurrently_by_owner",
          receipt,
          detail: "the question tool part carries another answer than ours",
        };
  }

  /** The tool part once it is settled (completed or error); OpenCode writes it as the turn goes on. */
  private async receipt(q: WorkerQuestion, waitMs: number): Promise<OpenCodeQuestionPart | undefined> {
    for (const end = Date.now() + waitMs; ; await sleep(100)) {
      const part = await readQuestionPart(this.call, this.sessionId, q.turnId, q.itemId);
      if (part && part.status !== "pending" && part.status !== "running") return part;
      if (Date.now() >= end) return undefined;
    }
  }

  private wire(q: WorkerQuestion, part: OpenCodeQuestionPart): ToolOutputReceipt {
    return { callId: q.itemId, turnId: q.turnId, output: part.output };
  }

  private finish(q: WorkerQuestion, answerJson: string, o: AnswerOutcome): AnswerOutcome {
    const atMs = Date.now();
    const s: LedgerState | undefined =
      o.result === "delivered"
        ? { state: "delivered", answerJson, atMs }
        : o.result === "unconfirmed"
          ? { state: "unconfirmed", reason: o.reason, answerJson, winningOutput: o.receipt?.output, atMs }
          : o.result === "uncertain"
            ? { state: "uncertain", reason: o.reason, answerJson, atMs }
            : o.result === "not_sent"
              ? { state: "not_sent", reason: o.reason, answerJson, atMs }
              : undefined;
    if (s) this.ledger.settle(q, s);
    return o;
  }
}
