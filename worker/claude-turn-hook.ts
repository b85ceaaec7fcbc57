/**
 * Claude Code's UserPromptSubmit and Stop hooks for Clankie seats: each files the turn
 * boundary it saw (working from a prompt, channel events included; idle at the end of the
 * reply) under the Claude process's pid, so the node agent knows busy from idle even when
 * the transcript lags (observed on 2.1.197: a reply shown on screen whose assistant line was
 * never written). It prints nothing: UserPromptSubmit's stdout would enter the model's context.
 */
import { ancestry, isClaude, type ProcessRow } from "./claude-session-start-hook.js";
import {
  SAFE_SESSION_ID,
  writeTurnReport,
  type ClaudeTurnReport,
} from "../node-agent/harnesses/claude/session-report.js";
import type { ProofProvider } from "../node-agent/proofs/provider.js";
import { selectProofProvider } from "../node-agent/proofs/select.js";

export interface TurnHookInput {
  session_id?: string;
  prompt_id?: string;
  hook_event_name?: string;
}

const STATE_BY_EVENT: Record<string, ClaudeTurnReport["state"]> = {
  UserPromptSubmit: "working",
  Stop: "idle",
  StopFailure: "idle",
};

/** The report this hook files, or undefined for events and processes it has no business with. */
export function decideTurn(
  input: TurnHookInput,
  ancestors: ProcessRow[] | undefined,
  nowMs: number,
): ClaudeTurnReport | undefined {
  const state = STATE_BY_EVENT[input.hook_event_name ?? ""];
  if (!state || !input.session_id || !SAFE_SESSION_ID.test(input.session_id)) return undefined;
  const claude = ancestors?.find((r) => isClaude(r.argv));
  if (!claude) return undefined;
  return {
    sessionId: input.session_id,
    promptId: typeof input.prompt_id === "string" ? input.prompt_id : "",
    state,
    event: input.hook_event_name!,
    claudePid: claude.pid,
    atMs: nowMs,
  };
}

export async function runTurnHook(
  reportDir: string | undefined,
  stdinText: string,
  provider?: ProofProvider,
): Promise<void> {
  if (!reportDir) return;
  let input: TurnHookInput;
  try {
    input = JSON.parse(stdinText) as TurnHookInput;
  } catch {
    return;
  }
  const facts = provider ?? selectProofProvider();
  let ancestors: ProcessRow[] | undefined;
  try {
    ancestors = await ancestry(facts, process.ppid);
  } finally {
    if (!provider) facts.close?.();
  }
  const report = decideTurn(input, ancestors, Date.now());
  if (!report) return;
  try {
    writeTurnReport(reportDir, report);
  } catch {
    // A failed report leaves the transcript's view in charge; the hook must never fail Claude's turn.
  }
}
