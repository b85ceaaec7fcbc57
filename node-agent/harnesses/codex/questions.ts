/**
 * A Codex worker's informational questions, seen and answered through its app-server (issue 13
 * part 4, rules 35 and 39). The watcher subscribes to the seat's exact thread, surfaces only
 * `item/tool/requestUserInput` (Codex's native request_user_input tool) bound to seat, pane,
 * thread, turn, tool call and request id, and answers it with the JSON-RPC response to that
 * server request: Codex's sync reply. Codex's async question (an `agentMessage` with
 * `delivery: "async"`) is surfaced the same way and answered by a user message
 * (codex-async-question.ts). Approvals, permission requests, MCP elicitations and
 * secret questions are never surfaced: they stay with the owner in the pane.
 *
 * The owner's TUI gets the same request; the first response wins and the later one is dropped
 * without a word. So a reply is `delivered` only when the winning tool-output receipt in the
 * rollout carries our answer; the owner's answer there (or a `serverRequest/resolved` before we
 * sent) is `unconfirmed`/`answered_concurrently_by_owner`; anything less is `uncertain`, and
 * the ledger then refuses a second answer until reconcile (reconcileRequest) reads the receipt.
 */
import type { CodexConnection, CodexServerRequest } from "./connection.js";
import { readToolOutputReceipt, sameAnswers } from "./answer-receipt.js";
import { asyncQuestionOf, judgeAsyncReply, sendAsyncReply } from "./async-question.js";
import type {
  AnswerOutcome,
  QuestionAnswers,
  QuestionBinding,
  ReconcileOutcome,
  WorkerQuestion,
} from "./question-types.js";
import type { LedgerState, QuestionKey, QuestionLedger } from "../../questions/question-ledger.js";

export const QUESTION_METHOD = "item/tool/requestUserInput";
export const MAX_ANSWER_BYTES = 32 * 1024;
const MAX_REMEMBERED = 256;

export type { AnswerOutcome, QuestionAnswers, QuestionBinding, WorkerQuestion } from "./question-types.js";

interface Tracked {
  q: WorkerQuestion;
  serverId: number | string;
  resolved: boolean;
  waiters: (() => void)[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class CodexQuestionWatcher {
  private readonly tracked = new Map<string, Tracked>();
  private readonly listeners = new Set<(q: WorkerQuestion) => void>();
  /** Server requests seen on this thread that are the owner's alone (method names), never surfaced. */
  readonly ownerOnly: string[] = [];
  private readonly offs: (() => void)[] = [];

  private constructor(
    private readonly conn: CodexConnection,
    readonly binding: QuestionBinding,
    private readonly rolloutPath: string,
    private readonly ledger: QuestionLedger,
  ) {
    this.offs.push(conn.onServerRequest((r) => this.onRequest(r)));
    this.offs.push(
      conn.onNotification((n) => {
        const asked = asyncQuestionOf(n, binding);
        if (asked) return this.track(asked, -1);
        if (n.method !== "serverRequest/resolved" || n.params.threadId !== binding.threadId) return;
        const t = this.tracked.get(String(n.params.requestId));
        if (!t) return;
        t.resolved = true;
        for (const w of t.waiters.splice(0)) w();
      }),
    );
  }

  /** Subscribes to the seat's thread (`thread/resume`, which also names its rollout). */
  static async attach(
    conn: CodexConnection,
    binding: QuestionBinding,
    ledger: QuestionLedger,
  ): Promise<{ ok: true; watcher: CodexQuestionWatcher } | { ok: false; message: string }> {
    const r = await conn.call<{ thread?: { id?: unknown; path?: unknown } }>("thread/resume", {
      threadId: binding.threadId,
    });
    if (!r.ok) return { ok: false, message: r.message };
    const path = r.result?.thread?.path;
    if (r.result?.thread?.id !== binding.threadId || typeof path !== "string")
      return { ok: false, message: "thread/resume did not name the seat's thread and rollout" };
    return { ok: true, watcher: new CodexQuestionWatcher(conn, binding, path, ledger) };
  }

  onQuestion(listener: (q: WorkerQuestion) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Questions still waiting for an answer. */
  open(): WorkerQuestion[] {
    return [...this.tracked.values()].filter((t) => !t.resolved).map((t) => t.q);
  }

  close(): void {
    for (const off of this.offs.splice(0)) off();
  }

  private onRequest(r: CodexServerRequest): void {
    if (r.params.threadId !== this.binding.threadId) return;
    const q = r.method === QUESTION_METHOD ? this.asQuestion(r) : undefined;
    if (!q) {
      this.ownerOnly.push(r.method);
      if (this.ownerOnly.length > MAX_REMEMBERED) this.ownerOnly.shift();
      return;
    }
    this.track(q, r.id);
  }

  private track(q: WorkerQuestion, serverId: number | string): void {
    if (this.tracked.has(q.requestId)) return;
    this.tracked.set(q.requestId, { q, serverId, resolved: false, waiters: [] });
    if (this.tracked.size > MAX_REMEMBERED) this.tracked.delete(this.tracked.keys().next().value!);
    for (const l of this.listeners) l(q);
  }

  /** An informational question, or undefined when any part of it is the owner's (a secret) or malformed. */
  private asQuestion(r: CodexServerRequest): WorkerQuestion | undefined {
    const p = r.params as { turnId?: unknown; itemId?: unknown; questions?: unknown };
    if (
      typeof p.turnId !== "string" ||
      typeof p.itemId !== "string" ||
      !Array.isArray(p.questions) ||
      p.questions.length === 0
    )
      return undefined;
    const questions: WorkerQuestion["questions"] = [];
    for (const raw of p.questions as Record<string, unknown>[]) {
      if (typeof raw?.id !== "string" || typeof raw.question !== "string" || raw.isSecret === true) return undefined;
      const options = Array.isArray(raw.options)
        ? (raw.options as { label?: unknown; description?: unknown }[]).map((o) => ({
            label: String(o?.label ?? ""),
            description: String(o?.description ?? ""),
          }))
        : null;
      questions.push({
        id: raw.id,
        header: String(raw.header ?? ""),
        question: raw.question,
        isOther: raw.isOther === true,
        options,
      });
    }
    const b = this.binding;
    return {
      seat: b.seat,
      occupantId: b.occupantId,
      paneId: b.paneId,
      threadId: b.threadId,
      turnId: p.turnId,
      itemId: p.itemId,
      requestId: String(r.id),
      questions,
    };
  }

  /** The lead's sync reply; see the file comment for what each outcome proves. */
  async answer(requestId: string, answers: QuestionAnswers, o: { waitMs?: number } = {}): Promise<AnswerOutcome> {
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
    const waitMs = o.waitMs ?? 10_000;
    if (t.q.async) {
      // Rule 39, async: a native user message, judged by its exact client id, content and turn.
      const out = this.finish(t.q, answerJson, await sendAsyncReply(this.conn, t.q, answers, waitMs));
      t.resolved = out.result !== "not_sent";
      return out;
    }
    if (t.resolved) return this.settleFromReceipt(t.q, answerJson, waitMs, true);
    if (!this.conn.isOpen) return this.finish(t.q, answerJson, { result: "not_sent", reason: "connection_closed" });
    const sent = await this.conn.respond(t.serverId, { answers });
    if (!sent) return this.finish(t.q, answerJson, { result: "uncertain", reason: "connection_lost" });
    const seen = await this.resolution(t, waitMs);
    if (seen !== "resolved") return this.finish(t.q, answerJson, { result: "uncertain", reason: seen });
    return this.settleFromReceipt(t.q, answerJson, waitMs, false);
  }

  /** Re-reads the receipt for an unsettled claim; sends nothing. */
  reconcile(key: QuestionKey): AnswerOutcome | LedgerState | undefined {
    const s = this.ledger.read(key);
    if (s === undefined || "unreadable" in s)
      return s === undefined ? undefined : { result: "uncertain", reason: "claim_unreadable" };
    if (s.state !== "sending" && s.state !== "uncertain") return s;
    const receipt = readToolOutputReceipt(this.rolloutPath, key.itemId, key.turnId);
    if (!receipt) return s;
    return this.finish(
      key,
      s.answerJson,
      sameAnswers(receipt.output, s.answerJson)
        ? { result: "delivered", receipt }
        : { result: "unconfirmed", reason: "answered_concurrently_by_owner", receipt },
    );
  }

  /** reconcile_only for one request: re-reads its receipt (the rollout's winning output, or the async reply's client id); settles only what it proves. */
  async reconcileRequest(requestId: string): Promise<ReconcileOutcome> {
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
    if (s.state === "unconfirmed") return { result: "unconfirmed", reason: s.reason };
    const stored = {
      result: "delivered" as const,
      receipt: { callId: t.q.itemId, turnId: t.q.turnId, output: s.answerJson },
    };
    if (t.q.async) {
      // The thread, read again: the user message with the reply's client id is the receipt.
      const o = await judgeAsyncReply(
        this.conn,
        t.q,
        (JSON.parse(s.answerJson) as { answers: QuestionAnswers }).answers,
      );
      if (s.state === "delivered") return o?.result === "delivered" ? o : stored;
      return o && (o.result === "delivered" || o.result === "unconfirmed")
        ? this.finish(t.q, s.answerJson, o)
        : { result: "uncertain", reason: "no_receipt" };
    }
    if (s.state === "delivered") return stored;
    const o = this.reconcile(t.q);
    return o && "result" in o ? o : { result: "uncertain", reason: "no_receipt" };
  }

  private resolution(t: Tracked, waitMs: number): Promise<"resolved" | "connection_lost" | "not_resolved"> {
    if (t.resolved) return Promise.resolve("resolved");
    return new Promise((resolve) => {
      let done = false;
      const end = (v: "resolved" | "connection_lost" | "not_resolved") => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
        resolve(v);
      };
      const timer = setTimeout(() => end("not_resolved"), waitMs);
      // A connection that closes will never carry the resolution.
      const poll = setInterval(() => !this.conn.isOpen && end("connection_lost"), 50);
      t.waiters.push(() => end("resolved"));
    });
  }

  private async settleFromReceipt(
    key: QuestionKey,
    answerJson: string,
    waitMs: number,
    ownerFirst: boolean,
  ): Promise<AnswerOutcome> {
    // Codex writes the output when the turn goes on; the rollout may lag the resolution a little.
    for (const end = Date.now() + waitMs; ; await sleep(50)) {
      const receipt = readToolOutputReceipt(this.rolloutPath, key.itemId, key.turnId);
      if (receipt) {
        const ours = !ownerFirst && sameAnswers(receipt.output, answerJson);
        return this.finish(
          key,
          answerJson,
          ours
            ? { result: "delivered", receipt }
            : { result: "unconfirmed", reason: "answered_concurrently_by_owner", receipt },
        );
      }
      if (Date.now() >= end) break;
    }
    // Resolved before we sent: nothing of ours left, whatever the rollout shows.
    if (ownerFirst)
      return this.finish(key, answerJson, { result: "unconfirmed", reason: "answered_concurrently_by_owner" });
    return this.finish(key, answerJson, { result: "uncertain", reason: "no_receipt" });
  }

  private finish(key: QuestionKey, answerJson: string, o: AnswerOutcome): AnswerOutcome {
    const atMs = Date.now();
    if (o.result === "delivered") this.ledger.settle(key, { state: "delivered", answerJson, atMs });
    else if (o.result === "unconfirmed")
      this.ledger.settle(key, {
        state: "unconfirmed",
        reason: o.reason,
        answerJson,
        winningOutput: o.receipt?.output,
        atMs,
      });
    else if (o.result === "uncertain")
      this.ledger.settle(key, { state: "uncertain", reason: o.reason, answerJson, atMs });
    else if (o.result === "not_sent")
      this.ledger.settle(key, { state: "not_sent", reason: o.reason, answerJson, atMs });
    return o;
  }
}

/** Every question answered, by its id, with non-empty strings, within the size bound; else why not. */
export function badAnswer(q: WorkerQuestion, answers: QuestionAnswers): string | undefined {
  const ids = new Set(q.questions.map((x) => x.id));
  for (const k of Object.keys(answers)) if (!ids.has(k)) return `no question has id ${JSON.stringify(k)}`;
  for (const id of ids) {
    const a = answers[id]?.answers;
    if (!Array.isArray(a) || a.length === 0 || a.some((s) => typeof s !== "string" || s.length === 0))
      return `question ${JSON.stringify(id)} needs at least one non-empty answer`;
  }
  if (Buffer.byteLength(JSON.stringify(answers)) > MAX_ANSWER_BYTES)
    return `the answers exceed ${MAX_ANSWER_BYTES} bytes`;
  return undefined;
}
