/**
 * The receipt of a Claude Code question (rule 35): the `tool_result` Claude wrote to the
 * session's transcript for that exact AskUserQuestion tool_use id. Whoever answered — our
 * PreToolUse hook's JSON, or the owner in the TUI's dialog after the hook let go — this line
 * is what the model was given, so it alone says whether our answer won. Observed on 2.1.197:
 * a `type:"user"` line whose content holds `{type:"tool_result", tool_use_id}` and whose
 * `toolUseResult.answers` maps each question's text to the answer string.
 */
import { readFileSync } from "node:fs";

export interface ClaudeAnswerReceipt {
  toolUseId: string;
  /** The transcript line's own uuid: the native receipt id. */
  uuid: string;
  /** What the tool gave back, by question text; absent when the owner declined or interrupted. */
  answers?: Record<string, string> | undefined;
  /** The tool_result text the model read. */
  content: string;
}

export function readClaudeAnswerReceipt(transcriptPath: string, toolUseId: string): ClaudeAnswerReceipt | undefined {
  let text: string;
  try {
    text = readFileSync(transcriptPath, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    // Cheap filter first: transcripts grow large, and most lines are other entries.
    if (!line.includes("tool_result") || !line.includes(toolUseId)) continue;
    let row: { type?: unknown; uuid?: unknown; message?: { content?: unknown }; toolUseResult?: unknown };
    try {
      row = JSON.parse(line);
    } catch {
      continue; // the last line may be half written
    }
    if (row.type !== "user" || !Array.isArray(row.message?.content)) continue;
    const block = (row.message.content as { type?: unknown; tool_use_id?: unknown; content?: unknown }[]).find(
      (b) => b?.type === "tool_result" && b.tool_use_id === toolUseId,
    );
    if (!block) continue;
    const r = row.toolUseResult as { answers?: unknown } | undefined;
    const answers =
      r && typeof r === "object" && r.answers && typeof r.answers === "object"
        ? (r.answers as Record<string, string>)
        : undefined;
    return {
      toolUseId,
      uuid: typeof row.uuid === "string" ? row.uuid : "",
      answers,
      content: typeof block.content === "string" ? block.content : JSON.stringify(block.content),
    };
  }
  return undefined;
}
