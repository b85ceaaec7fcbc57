/**
 * Claude Code's PreToolUse hook for AskUserQuestion on Clankie seats (issue 13 part 4, rule
 * 35): `clankie worker question-hook --agent-state-dir DIR [--wait-seconds N]`. It sends the
 * exact tool call (session, prompt, tool_use id, questions) to the node agent's worker socket,
 * where the kernel proves it runs in the seat's pane under the seat's Claude, and waits — at
 * most N seconds (default 300; Claude's own hook timeout is 600) — for the hiring lead's answer.
 * The answer is printed as hook JSON: `permissionDecision:"allow"` with the tool's input plus
 * `answers` (question text → answer), which Claude 2.1.197 takes as the user's answer without
 * showing its dialog. Anything else — another tool or event, a subagent's question, no agent, a
 * refusal, the wait running out — prints nothing: Claude then shows its own dialog and the
 * owner answers. Never a guess, never keys typed into the pane.
 */
import { join } from "node:path";
import { askAgent } from "./agent-socket-client.js";
import { WORKER_SOCKET } from "../node-agent/worker-link/worker-endpoint.js";
import { CLAUDE_QUESTION_TOOL } from "../node-agent/harnesses/claude/questions.js";

export const DEFAULT_WAIT_SECONDS = 300;
/** Below Claude's 600 s hook timeout, so the hook always lets go before Claude kills it. */
export const MAX_WAIT_SECONDS = 590;

export interface QuestionHookInput {
  session_id?: unknown;
  prompt_id?: unknown;
  hook_event_name?: unknown;
  tool_name?: unknown;
  tool_input?: unknown;
  tool_use_id?: unknown;
  agent_id?: unknown;
}

/** The request for the agent, or undefined for inputs this hook never delegates. */
export function questionRequest(input: QuestionHookInput): Record<string, unknown> | undefined {
  if (input.hook_event_name !== "PreToolUse" || input.tool_name !== CLAUDE_QUESTION_TOOL) return undefined;
  // A subagent's question belongs to its parent session's owner: not delegated.
  if (input.agent_id !== undefined && input.agent_id !== null && input.agent_id !== "") return undefined;
  const toolInput = input.tool_input as { questions?: unknown } | undefined;
  if (
    typeof input.session_id !== "string" ||
    typeof input.tool_use_id !== "string" ||
    !Array.isArray(toolInput?.questions)
  )
    return undefined;
  return {
    op: "question",
    sessionId: input.session_id,
    promptId: typeof input.prompt_id === "string" ? input.prompt_id : "",
    toolUseId: input.tool_use_id,
    questions: toolInput.questions,
  };
}

/** The hook JSON for an answer the agent sent: only when it answers exactly the questions asked. */
export function answerJson(input: QuestionHookInput, answers: unknown): string {
  const toolInput = input.tool_input as { questions: { question?: unknown }[] } & Record<string, unknown>;
  const asked = toolInput.questions.map((q) => q?.question);
  if (typeof answers !== "object" || answers === null) return "";
  const given = answers as Record<string, unknown>;
  const keys = Object.keys(given);
  if (keys.length !== asked.length || asked.some((q) => typeof q !== "string" || typeof given[q] !== "string"))
    return "";
  return JSON.stringify({
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: "allow",
      permissionDecisionReason: "answered by the hiring lead through Clankie",
      updatedInput: { ...toolInput, answers: given },
    },
  });
}

export async function runQuestionHook(
  agentStateDir: string | undefined,
  stdinText: string,
  waitSeconds = DEFAULT_WAIT_SECONDS,
): Promise<string> {
  if (!agentStateDir) return "";
  let input: QuestionHookInput;
  try {
    input = JSON.parse(stdinText) as QuestionHookInput;
  } catch {
    return "";
  }
  const request = questionRequest(input);
  if (!request) return "";
  const waitMs = Math.min(Math.max(1, waitSeconds), MAX_WAIT_SECONDS) * 1000;
  const a = await askAgent(join(agentStateDir, "worker", WORKER_SOCKET), request, waitMs);
  // Leaving ends the connection: the agent then knows the question is the owner's again.
  if (a.kind !== "answer" || a.body.ok !== true) return "";
  return answerJson(input, a.body.answers);
}
