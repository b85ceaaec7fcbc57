/**
 * The native write into a proven Codex thread, on the very connection the proofs used:
 * `turn/steer` with the exact expectedTurnId, or `thread/queue/add` (explicit Queue, and
 * Auto in every state). Each write carries our delivery id as `clientUserMessageId`; the
 * receipt is the `userMessage` item (or queued submission) carrying it back. Once a request
 * has left, a missing answer is `unconfirmed`: never a fallback, never a second send.
 *
 * Auto on an idle thread uses `thread/queue/add` rather than `turn/start`: Codex starts the
 * queued input at once, and if a turn began since the proof the input waits instead of
 * joining that turn. `turn/start` on a turn that just became active silently joins it as a
 * steer (observed on 0.169.0), a write the proofs did not cover.
 */
import { AgentResult, type DeliveryMode } from "../../../shared/verdicts.js";
import type { NativeWriteResult } from "../adapter.js";
import type { CallOutcome, CodexConnection } from "./connection.js";
import { listClientMessages, type ThreadObservation } from "./thread.js";

export interface CodexWriteOptions {
  /** How long to look for the userMessage item carrying our client id. */
  confirmTimeoutMs: number;
  confirmPollMs: number;
  callTimeoutMs: number;
}

export interface ProvenThread {
  connection: CodexConnection;
  observation: ThreadObservation;
}

function textInput(text: string) {
  return [{ type: "text", text, text_elements: [] as unknown[] }];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls the thread's recent turns for the user message carrying `clientId`. */
export async function findReceipt(
  conn: CodexConnection,
  threadId: string,
  clientId: string,
  o: CodexWriteOptions,
): Promise<{ turnId: string; itemId: string } | undefined> {
  const deadline = Date.now() + o.confirmTimeoutMs;
  for (;;) {
    const r = await listClientMessages(conn, threadId, 3);
    const hit = r.ok ? r.value.messages.find((m) => m.clientId === clientId) : undefined;
    if (hit) return { turnId: hit.turnId, itemId: hit.itemId };
    if (!conn.isOpen || Date.now() >= deadline) return undefined;
    await sleep(o.confirmPollMs);
  }
}

function lost(method: string, o: CallOutcome & { ok: false }): NativeWriteResult {
  return {
    result: AgentResult.Unconfirmed,
    reason: "response_lost",
    detail: `${method} was sent but its answer was lost (${o.kind}: ${o.message}); it may have been applied. Not retried, no queue fallback.`,
  };
}

/** The server answered with an error: the request was refused, so nothing was written. */
function refused(method: string, o: { message: string }): NativeWriteResult {
  if (/expected active turn id/i.test(o.message)) {
    return {
      result: AgentResult.Rejected,
      reason: "turn_changed",
      detail: `${method} refused: ${o.message}. The turn changed after the proof; nothing was written and nothing else was tried.`,
    };
  }
  if (/no active turn/i.test(o.message)) {
    return {
      result: AgentResult.Rejected,
      reason: "no_active_turn",
      detail: `${method} refused: ${o.message}; nothing was written and nothing else was tried.`,
    };
  }
  return {
    result: AgentResult.Rejected,
    reason: "codex_refused",
    detail: `${method} refused: ${o.message}; nothing was written.`,
  };
}

async function steer(
  p: ProvenThread,
  deliveryId: string,
  text: string,
  o: CodexWriteOptions,
): Promise<NativeWriteResult> {
  const { threadId, activeTurnId } = p.observation;
  if (!activeTurnId) {
    return {
      result: AgentResult.Rejected,
      reason: "no_active_turn",
      detail:
        "the thread is idle, so there is no turn to steer; nothing was written (no fallback to a new turn or the queue)",
    };
  }
  const r = await p.connection.call<{ turnId?: unknown }>(
    "turn/steer",
    { threadId, expectedTurnId: activeTurnId, clientUserMessageId: deliveryId, input: textInput(text) },
    o.callTimeoutMs,
  );
  if (!r.ok) return r.kind === "error" ? refused("turn/steer", r) : lost("turn/steer", r);
  if (r.result?.turnId !== activeTurnId) {
    return {
      result: AgentResult.Unconfirmed,
      reason: "bad_reply",
      detail: `turn/steer answered turn ${JSON.stringify(r.result?.turnId)}, not ${activeTurnId}`,
    };
  }
  const receipt = await findReceipt(p.connection, threadId, deliveryId, o);
  if (!receipt) {
    return {
      result: AgentResult.Unconfirmed,
      reason: "receipt_missing",
      detail: `turn/steer was accepted but no userMessage with clientId ${deliveryId} appeared within ${o.confirmTimeoutMs} ms`,
    };
  }
  return {
    result: AgentResult.Steered,
    nativeReceiptId: `${threadId}/${receipt.turnId}/${receipt.itemId}`,
    detail: `steered into active turn ${receipt.turnId}`,
  };
}

async function queue(
  p: ProvenThread,
  deliveryId: string,
  text: string,
  mode: DeliveryMode,
  o: CodexWriteOptions,
): Promise<NativeWriteResult> {
  const { threadId, activeTurnId } = p.observation;
  const r = await p.connection.call<{ queuedSubmission?: { id?: unknown; clientUserMessageId?: unknown } }>(
    "thread/queue/add",
    { threadId, clientUserMessageId: deliveryId, input: textInput(text) },
    o.callTimeoutMs,
  );
  if (!r.ok) return r.kind === "error" ? refused("thread/queue/add", r) : lost("thread/queue/add", r);
  const sub = r.result?.queuedSubmission;
  if (typeof sub?.id !== "string" || sub.clientUserMessageId !== deliveryId) {
    return {
      result: AgentResult.Unconfirmed,
      reason: "bad_reply",
      detail: "thread/queue/add answered without our queued submission",
    };
  }
  const queued: NativeWriteResult = {
    result: AgentResult.Queued,
    nativeReceiptId: `${threadId}/queue/${sub.id}`,
    detail: activeTurnId
      ? `queued_until_turn_end: Codex runs it when turn ${activeTurnId} completes (an interrupted turn leaves it queued)`
      : "queued in Codex's native queue",
  };
  // Auto on an idle thread means "start": Codex starts queued input at once on an idle thread.
  if (mode === "auto" && !activeTurnId) {
    const receipt = await findReceipt(p.connection, threadId, deliveryId, o);
    if (receipt)
      return {
        result: AgentResult.Started,
        nativeReceiptId: `${threadId}/${receipt.turnId}/${receipt.itemId}`,
        detail: `started turn ${receipt.turnId}`,
      };
    return { ...queued, detail: "accepted by Codex's native queue; a turn had not started from it yet" };
  }
  return queued;
}

export async function writeToThread(
  p: ProvenThread,
  deliveryId: string,
  text: string,
  mode: DeliveryMode,
  o: CodexWriteOptions,
): Promise<NativeWriteResult> {
  if (mode === "steer") return steer(p, deliveryId, text, o);
  return queue(p, deliveryId, text, mode, o);
}
