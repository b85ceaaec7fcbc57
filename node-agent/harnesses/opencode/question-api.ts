/**
 * OpenCode's native question tool, at the HTTP level (issue 13 part 4; ADR 0050 addendum
 * "OpenCode questions"). Observed on the pinned 1.18.33: the model's `question` tool
 * (`{questions:[{question, header, options:[{label, description}], multiple?, custom?}]}`)
 * holds its call open as a pending request, listed by `GET /question` with its session and
 * `tool:{messageID, callID}`; `POST /question/{id}/reply {answers: string[][]}` answers it
 * (200 `true`), and a request already answered (by the TUI, say) is a 404
 * QuestionNotFoundError. The tool part of that message and call then shows what the model was
 * given: `state.metadata.answers` and `state.output`. Permission prompts are other routes
 * (`/permission`), never read here.
 */
import { jsonBody, type HttpOutcome } from "./http.js";
import type { OpenCodeCall } from "./probe.js";

export interface OpenCodeQuestionRequest {
  id: string;
  sessionID: string;
  questions: {
    question: string;
    header: string;
    options: { label: string; description: string }[];
    multiple?: boolean;
    custom?: boolean;
  }[];
  tool: { messageID: string; callID: string };
}

/** What the question's tool part shows: the answers the model got (undefined while pending) and its text. */
export interface OpenCodeQuestionPart {
  status: string;
  answers?: string[][] | undefined;
  output: string;
}

export type ReplyOutcome =
  | { sent: "accepted" }
  | { sent: "gone" }
  | { sent: "refused"; detail: string }
  | { sent: "not_connected"; detail: string }
  | { sent: "lost"; detail: string };

function isRequest(v: unknown): v is OpenCodeQuestionRequest {
  const r = v as OpenCodeQuestionRequest | undefined;
  return (
    typeof r?.id === "string" &&
    typeof r.sessionID === "string" &&
    Array.isArray(r.questions) &&
    typeof r.tool?.messageID === "string" &&
    typeof r.tool.callID === "string"
  );
}

/** The session's pending questions, or undefined when the server could not be read. */
export async function pendingQuestions(
  call: OpenCodeCall,
  sessionId: string,
  dirQuery: string,
): Promise<OpenCodeQuestionRequest[] | undefined> {
  const list = jsonBody<unknown[]>(await call("GET", `/question${dirQuery}`));
  if (!Array.isArray(list)) return undefined;
  return list.filter(isRequest).filter((r) => r.sessionID === sessionId);
}

/** One reply to one request; says how far it got (a lost reply may have been taken). */
export async function replyQuestion(
  call: OpenCodeCall,
  requestId: string,
  answers: string[][],
  dirQuery: string,
): Promise<ReplyOutcome> {
  const o: HttpOutcome = await call("POST", `/question/${encodeURIComponent(requestId)}/reply${dirQuery}`, { answers });
  if (o.kind === "not_connected") return { sent: "not_connected", detail: o.detail };
  if (o.kind === "lost") return { sent: "lost", detail: o.detail };
  if (o.status === 404) return { sent: "gone" };
  if (o.status >= 500) return { sent: "lost", detail: `HTTP ${o.status}` };
  if (o.status >= 400) return { sent: "refused", detail: `HTTP ${o.status}: ${o.body.slice(0, 200)}` };
  return { sent: "accepted" };
}

/** The question's tool part in its message, or undefined when it cannot be read. */
export async function readQuestionPart(
  call: OpenCodeCall,
  sessionId: string,
  messageId: string,
  callId: string,
): Promise<OpenCodeQuestionPart | undefined> {
  const m = jsonBody<{
    parts?: {
      type?: unknown;
      callID?: unknown;
      tool?: unknown;
      state?: { status?: unknown; output?: unknown; error?: unknown; metadata?: { answers?: unknown } };
    }[];
  }>(await call("GET", `/session/${encodeURIComponent(sessionId)}/message/${encodeURIComponent(messageId)}`));
  const part = m?.parts?.find((p) => p.type === "tool" && p.callID === callId && p.tool === "question");
  if (!part?.state || typeof part.state.status !== "string") return undefined;
  const a = part.state.metadata?.answers;
  const answers =
    Array.isArray(a) && a.every((x) => Array.isArray(x) && x.every((s) => typeof s === "string"))
      ? (a as string[][])
      : undefined;
  const output =
    typeof part.state.output === "string"
      ? part.state.output
      : typeof part.state.error === "string"
        ? part.state.error
        : "";
  return { status: part.state.status, answers, output };
}
