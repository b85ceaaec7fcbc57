/**
 * The two OpenCode write routes and the receipt each gives. v1 `POST /session/{id}/prompt_async`
 * with our messageID is the route for every delivery that starts or waits for a v1 turn: on the
 * pinned 1.18.33 only a turn it starts is offered the session's MCP tools (the worker server's
 * message_clankie among them; a v2 prompt turn is offered none, see
 * test/harnesses/opencode-mcp-routes.test.ts). Its receipt is our message id read back from the
 * session; the turn began when an assistant message names it as its parent. v2
 * `POST /api/session/{id}/prompt` (steer|queue, our id, the durable admittedSeq as receipt) is
 * kept only to join a run another client started through v2, which v1 cannot see or queue behind.
 */
import { AgentResult } from "../../../shared/verdicts.js";
import type { NativeWrite, NativeWriteResult } from "../adapter.js";
import { jsonBody, type HttpOutcome } from "./http.js";
import { v1MessageId, v2MessageId } from "./ids.js";
import type { OpenCodeControl } from "./control.js";
import type { OpenCodeCall } from "./probe.js";

export interface WriteTiming {
  timeoutMs: number;
  /** How long a write waits for its receipt, and an idle seat's for the turn to begin. */
  waitMs: number;
  pollMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How many of the newest messages are read to find the turn that answers ours. */
const TURN_WINDOW = 20;

/** A write that did not get a 2xx: definite not-sent only when nothing can have reached OpenCode, or it refused. */
export function unsent(o: HttpOutcome): NativeWriteResult | undefined {
  if (o.kind === "not_connected")
    return { result: AgentResult.NotSent, reason: "opencode_unreachable", detail: `${o.detail}; nothing was sent` };
  if (o.kind === "lost")
    return {
      result: AgentResult.Unconfirmed,
      reason: "response_lost",
      detail: `the prompt was sent but its answer was lost (${o.detail}); not resent`,
    };
  if (o.status >= 500)
    return {
      result: AgentResult.Unconfirmed,
      reason: "opencode_error",
      detail: `OpenCode answered HTTP ${o.status} after receiving the prompt; it may have been admitted; not resent`,
    };
  if (o.status >= 400)
    return {
      result: AgentResult.NotSent,
      reason: "refused_by_opencode",
      detail: `OpenCode refused the prompt (HTTP ${o.status}): ${o.body.slice(0, 200)}`,
    };
  return undefined;
}

interface V1Message {
  info?: { id?: string; role?: string; parentID?: string };
}

/** v1: prompt_async with our message id; the receipt is that id stored as a user message of the session. */
export async function writeV1(
  call: OpenCodeCall,
  control: OpenCodeControl,
  message: NativeWrite,
  running: boolean,
  dirQuery: string,
  t: WriteTiming,
): Promise<NativeWriteResult> {
  const id = v1MessageId(message.deliveryId, Date.now());
  const sid = encodeURIComponent(control.sessionId);
  const bad = unsent(
    await call("POST", `/session/${sid}/prompt_async${dirQuery}`, {
      parts: [{ type: "text", text: message.text }],
      messageID: id,
    }),
  );
  if (bad) return bad;
  const receipt = `${control.sessionId}#${id}`;
  const deadline = Date.now() + t.waitMs;
  let stored = false;
  do {
    if (!stored) {
      const own = jsonBody<V1Message>(await call("GET", `/session/${sid}/message/${encodeURIComponent(id)}`));
      stored = own?.info?.id === id && own.info.role === "user";
      if (stored && running)
        return {
          result: AgentResult.Queued,
          nativeReceiptId: receipt,
          detail:
            "stored with our message id (v1 prompt_async) while a turn runs: OpenCode takes it at that turn's next step, or when it ends",
        };
    }
    if (stored) {
      // A failed read is a poll gap, not a verdict: the stored message already stands.
      const recent = jsonBody<V1Message[]>(await call("GET", `/session/${sid}/message?limit=${TURN_WINDOW}`));
      const turn = Array.isArray(recent)
        ? recent.find((m) => m.info?.role === "assistant" && m.info.parentID === id)
        : undefined;
      if (turn)
        return {
          result: AgentResult.Delivered,
          nativeReceiptId: receipt,
          detail: `stored with our message id; a turn began with it (assistant ${turn.info?.id ?? "?"})`,
        };
    }
    await sleep(t.pollMs);
  } while (Date.now() < deadline);
  if (stored)
    return {
      result: AgentResult.Queued,
      nativeReceiptId: receipt,
      detail: "stored with our message id (v1 prompt_async); no turn has begun with it yet",
    };
  return {
    result: AgentResult.Unconfirmed,
    reason: "receipt_missing",
    detail: `OpenCode accepted prompt_async but our message id ${id} did not appear within ${t.waitMs} ms; not resent`,
  };
}

/** v2, only while a v2 run is going: steer joins it at its next step, queue waits for its end. */
export async function writeV2(
  call: OpenCodeCall,
  control: OpenCodeControl,
  message: NativeWrite,
): Promise<NativeWriteResult> {
  const id = v2MessageId(message.deliveryId);
  const delivery = message.mode === "steer" ? "steer" : "queue";
  const sid = encodeURIComponent(control.sessionId);
  const o = await call("POST", `/api/session/${sid}/prompt`, { prompt: { text: message.text }, id, delivery });
  const bad = unsent(o);
  if (bad) return bad;
  const admitted = jsonBody<{ data?: { admittedSeq?: number; id?: string } }>(o)?.data;
  if (admitted?.id !== id || typeof admitted.admittedSeq !== "number") {
    return {
      result: AgentResult.Unconfirmed,
      reason: "receipt_mismatch",
      detail: `OpenCode answered without an admission of ${id}; not resent`,
    };
  }
  const receipt = `${control.sessionId}#${admitted.admittedSeq}`;
  if (delivery === "steer")
    return {
      result: AgentResult.Steered,
      nativeReceiptId: receipt,
      detail: `admitted at seq ${admitted.admittedSeq} as steer; joins the running v2 turn at its next step boundary`,
    };
  return {
    result: AgentResult.Queued,
    nativeReceiptId: receipt,
    detail: `queued_until_turn_end: admitted at seq ${admitted.admittedSeq}`,
  };
}
