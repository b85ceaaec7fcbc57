/**
 * Codex's async question and its reply (issue 13 part 4, rule 39; ADR 0050 addendum "Async
 * questions"). With `[features] send_message_to_user_async = true`, the pinned 0.169.0 offers
 * the model `send_message_to_user_async{message}`: it returns at once (`{"accepted":true}`), the
 * turn goes on, and the thread shows an `agentMessage` with `delivery: "async"` (its id is the
 * tool call's). "Any reply arrives asynchronously as a new user message" (the tool's own text),
 * so the reply is a native user message on the seat's thread, written through the same
 * app-server with a client id derived from the question, and it is `delivered` only when the
 * thread shows the user message carrying exactly that client id and that content, in the turn
 * it returned. A user message from anyone else after the question, before ours, is the owner's
 * answer: `unconfirmed` / `answered_concurrently_by_owner` (and nothing is sent when it came
 * first). A lost answer is `uncertain`: the ledger's claim then refuses any second answer, and
 * reconcile (`judgeAsyncReply`) re-reads the thread for the reply's client id; it sends nothing.
 */
import { createHash } from "node:crypto";
import { AgentResult } from "../../../shared/verdicts.js";
import type { CodexConnection, CodexNotification } from "./connection.js";
import { observeThread } from "./thread.js";
import { findReceipt, writeToThread, type CodexWriteOptions } from "./write.js";
import type { AnswerOutcome, QuestionAnswers, QuestionBinding, WorkerQuestion } from "./question-types.js";
import type { QuestionKey } from "../../questions/question-ledger.js";

/** The one answer an async question takes: the reply text. */
export const ASYNC_REPLY_ID = "reply";

const WRITE: CodexWriteOptions = { confirmTimeoutMs: 8000, confirmPollMs: 100, callTimeoutMs: 10_000 };

/** An async question seen on the seat's own thread, or undefined. */
export function asyncQuestionOf(n: CodexNotification, b: QuestionBinding): WorkerQuestion | undefined {
  if (n.method !== "item/completed" || n.params.threadId !== b.threadId || typeof n.params.turnId !== "string")
    return undefined;
  const item = n.params.item as
    | { type?: unknown; id?: unknown; text?: unknown; delivery?: unknown; completedAtMs?: unknown }
    | undefined;
  if (
    item?.type !== "agentMessage" ||
    item.delivery !== "async" ||
    typeof item.id !== "string" ||
    typeof item.text !== "string" ||
    item.text.trim() === ""
  )
    return undefined;
  return {
    seat: b.seat,
    occupantId: b.occupantId,
    paneId: b.paneId,
    threadId: b.threadId,
    turnId: n.params.turnId,
    itemId: item.id,
    requestId: `async:${n.params.turnId}:${item.id}`,
    questions: [{ id: ASYNC_REPLY_ID, header: "Reply", question: item.text, isOther: true, options: null }],
    async: { askedAtMs: typeof item.completedAtMs === "number" ? item.completedAtMs : Date.now() },
  };
}

/** The reply's text: the answers given, one per line. */
export function asyncReplyText(answers: QuestionAnswers): string {
  return (answers[ASYNC_REPLY_ID]?.answers ?? []).join("\n");
}

/** One client id per question, ever: a reconcile finds the reply by it. */
export function asyncReplyClientId(key: QuestionKey): string {
  const h = createHash("sha256")
    .update(`clankie-async-reply:${key.threadId}/${key.turnId}/${key.itemId}`)
    .digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

type UserMessage = { clientId: string | null; itemId: string; turnId: string; text: string; atMs: number };

/** User messages on the thread since `sinceMs` (newest turns first, up to 10), any client's. */
async function userMessagesSince(
  conn: CodexConnection,
  threadId: string,
  sinceMs: number,
): Promise<UserMessage[] | undefined> {
  const r = await conn.call<{
    data?: {
      id?: unknown;
      items?: {
        type?: unknown;
        id?: unknown;
        clientId?: unknown;
        startedAtMs?: unknown;
        content?: { type?: unknown; text?: unknown }[];
      }[];
    }[];
  }>("thread/turns/list", { threadId, cursor: null, limit: 10, itemsView: "full" });
  if (!r.ok || !Array.isArray(r.result?.data)) return undefined;
  const out: UserMessage[] = [];
  for (const turn of r.result.data) {
    for (const item of turn.items ?? []) {
      if (item.type !== "userMessage" || typeof item.id !== "string") continue;
      const atMs = typeof item.startedAtMs === "number" ? item.startedAtMs : 0;
      if (atMs < sinceMs) continue;
      const text = (item.content ?? [])
        .map((c) => (c.type === "text" && typeof c.text === "string" ? c.text : ""))
        .join("");
      out.push({
        clientId: typeof item.clientId === "string" ? item.clientId : null,
        itemId: item.id,
        turnId: String(turn.id),
        text,
        atMs,
      });
    }
  }
  return out;
}

/** The reply as the thread shows it, judged: ours exactly, after nobody else's. */
async function judge(
  conn: CodexConnection,
  q: WorkerQuestion,
  clientId: string,
  text: string,
): Promise<AnswerOutcome | undefined> {
  const since = q.async?.askedAtMs ?? 0;
  const seen = await userMessagesSince(conn, q.threadId, since);
  if (!seen) return undefined;
  const ours = seen.find((m) => m.clientId === clientId);
  if (!ours) return undefined;
  const receipt = { callId: ours.itemId, turnId: ours.turnId, output: ours.text };
  if (ours.text !== text) return { result: "uncertain", reason: "no_receipt" };
  const before = seen.some((m) => m.clientId !== clientId && m.atMs <= ours.atMs);
  const where = `user message ${ours.itemId} in turn ${ours.turnId} carries this answer under client id ${clientId}`;
  return before
    ? {
        result: "unconfirmed",
        reason: "answered_concurrently_by_owner",
        receipt,
        detail: `someone else answered in the thread first; then this answer was written too (${where})`,
      }
    : { result: "delivered", receipt, detail: `the async reply: ${where}` };
}

/** reconcile_only: the reply as the thread shows it now (by its client id), or undefined when unproven. */
export function judgeAsyncReply(
  conn: CodexConnection,
  q: WorkerQuestion,
  answers: QuestionAnswers,
): Promise<AnswerOutcome | undefined> {
  return conn.isOpen ? judge(conn, q, asyncReplyClientId(q), asyncReplyText(answers)) : Promise.resolve(undefined);
}

/** Sends the lead's reply once (the caller holds the ledger's claim); see the file comment. */
export async function sendAsyncReply(
  conn: CodexConnection,
  q: WorkerQuestion,
  answers: QuestionAnswers,
  waitMs: number,
): Promise<AnswerOutcome> {
  if (!conn.isOpen) return { result: "not_sent", reason: "connection_closed" };
  const since = q.async?.askedAtMs ?? 0;
  const first = await userMessagesSince(conn, q.threadId, since);
  if (!first) return { result: "not_sent", reason: "connection_closed" };
  // Someone already answered in the thread: nothing of ours is sent.
  if (first.length > 0)
    return {
      result: "unconfirmed",
      reason: "answered_concurrently_by_owner",
      detail: `${first.length} user message(s) reached the thread after the question; this answer was not sent`,
    };
  const obs = await observeThread(conn, q.threadId);
  if (!obs.ok) return { result: "not_sent", reason: "connection_closed" };
  const clientId = asyncReplyClientId(q);
  const text = asyncReplyText(answers);
  const w = await writeToThread({ connection: conn, observation: obs.value }, clientId, text, "auto", WRITE);
  if (w.result === AgentResult.Rejected || w.result === AgentResult.NotSent)
    return { result: "not_sent", reason: "refused_by_codex" };
  if (w.result === AgentResult.Unconfirmed) return { result: "uncertain", reason: "connection_lost" };
  // Queued behind a running turn: the user message appears when Codex starts it.
  if (w.result === AgentResult.Queued)
    await findReceipt(conn, q.threadId, clientId, { ...WRITE, confirmTimeoutMs: waitMs });
  return (await judge(conn, q, clientId, text)) ?? { result: "uncertain", reason: "no_receipt" };
}
