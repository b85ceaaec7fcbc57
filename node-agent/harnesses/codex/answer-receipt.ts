/**
 * The winning tool-output receipt of a Codex question (ADR 0207, rule 39): the
 * `function_call_output` that Codex wrote to the thread's rollout for the request_user_input
 * call, in that turn. Whichever client answered first, this is what the model was given, so it
 * alone says whether our answer won. The app-server does not stream it to a client that did not
 * start the thread with raw events, and `thread/turns/list` omits it; the rollout file (the
 * path `thread/resume` returns) holds it.
 */
import { readFileSync } from "node:fs";

export interface ToolOutputReceipt {
  callId: string;
  turnId: string;
  output: string;
}

export function readToolOutputReceipt(
  rolloutPath: string,
  callId: string,
  turnId: string,
): ToolOutputReceipt | undefined {
  let text: string;
  try {
    text = readFileSync(rolloutPath, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    // Cheap filter first: rollouts grow large, and most lines are other items.
    if (!line.includes("function_call_output") || !line.includes(callId)) continue;
    let row: {
      type?: unknown;
      payload?: {
        type?: unknown;
        call_id?: unknown;
        output?: unknown;
        internal_chat_message_metadata_passthrough?: { turn_id?: unknown };
      };
    };
    try {
      row = JSON.parse(line);
    } catch {
      continue; // the last line may be half written
    }
    const p = row.payload;
    if (row.type !== "response_item" || p?.type !== "function_call_output" || p.call_id !== callId) continue;
    const rowTurn = p.internal_chat_message_metadata_passthrough?.turn_id;
    if (rowTurn !== undefined && rowTurn !== turnId) continue;
    return { callId, turnId, output: typeof p.output === "string" ? p.output : JSON.stringify(p.output) };
  }
  return undefined;
}

/** Same answers, compared as data: key order and spacing in the output do not matter. */
export function sameAnswers(output: string, answerJson: string): boolean {
  try {
    return canonical(JSON.parse(output)) === canonical(JSON.parse(answerJson));
  } catch {
    return false;
  }
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}
