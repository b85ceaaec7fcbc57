/**
 * The one line a Claude question hook sends the agent's worker endpoint (`op: "question"`),
 * checked before anything is proved or filed: the session, prompt and tool_use ids and the
 * questions exactly as AskUserQuestion carried them, within bounds. Anything else is a bad
 * request and the hook lets the owner answer. And the hook's connection as the desk sees it:
 * one answer line, written at most once.
 */
import type { Socket } from "node:net";
import { SAFE_SESSION_ID } from "./session-report.js";
import type { ClaudeAsk, HookLine } from "./questions.js";

const SAFE_ID = /^[A-Za-z0-9_-]{1,200}$/;
const MAX_QUESTIONS = 20;
const MAX_OPTIONS = 20;
const MAX_TEXT = 4096;

const text = (v: unknown, max = MAX_TEXT): v is string => typeof v === "string" && v.length <= max;

export function parseClaudeAsk(m: Record<string, unknown>): ClaudeAsk | undefined {
  const { sessionId, promptId, toolUseId, questions } = m;
  if (typeof sessionId !== "string" || !SAFE_SESSION_ID.test(sessionId)) return undefined;
  if (typeof toolUseId !== "string" || !SAFE_ID.test(toolUseId)) return undefined;
  if (!text(promptId, 200)) return undefined;
  if (!Array.isArray(questions) || questions.length === 0 || questions.length > MAX_QUESTIONS) return undefined;
  const out: ClaudeAsk["questions"] = [];
  const seen = new Set<string>();
  for (const raw of questions as Record<string, unknown>[]) {
    if (
      typeof raw !== "object" ||
      raw === null ||
      !text(raw.question) ||
      raw.question.length === 0 ||
      seen.has(raw.question)
    )
      return undefined;
    // Claude keys the answers by question text: two equal texts could not be told apart.
    seen.add(raw.question);
    const options = raw.options === undefined ? [] : raw.options;
    if (!Array.isArray(options) || options.length > MAX_OPTIONS) return undefined;
    const opts: { label: string; description: string }[] = [];
    for (const o of options as Record<string, unknown>[]) {
      if (
        typeof o !== "object" ||
        o === null ||
        !text(o.label) ||
        (o.description !== undefined && !text(o.description))
      )
        return undefined;
      opts.push({ label: o.label, description: typeof o.description === "string" ? o.description : "" });
    }
    out.push({
      question: raw.question,
      header: text(raw.header, 200) ? raw.header : "",
      options: opts,
      multiSelect: raw.multiSelect === true,
    });
  }
  return { sessionId, promptId, toolUseId, questions: out };
}

/** The hook's open connection: `send` is true only once the line was handed to the kernel on a live socket. */
export function hookLine(socket: Socket): HookLine {
  let replied = false;
  return {
    isOpen: () => !socket.destroyed && socket.writable,
    send: (body) =>
      new Promise<boolean>((resolve) => {
        if (replied || socket.destroyed || !socket.writable) return resolve(false);
        replied = true;
        socket.write(JSON.stringify(body) + "\n", (e) => resolve(!e));
      }),
    onClose: (listener) => void socket.once("close", listener),
  };
}
