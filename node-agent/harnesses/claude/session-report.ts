/**
 * What Claude's hooks tell the node agent, filed under the Claude process's pid (the same key
 * the channel socket uses): from SessionStart, the session id and transcript path; from
 * UserPromptSubmit and Stop, whether a turn is running. Reports are hints to find the
 * transcript and to judge busy or idle, never authority for a write.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurably } from "../../../shared/durable-file.js";

export interface ClaudeSessionReport {
  sessionId: string;
  transcriptPath: string;
  cwd: string;
  source: string;
  claudePid: number;
  atMs: number;
  /**
   * The session's own inbox socket (Claude Code 2.1.224+, cross-session messaging) and the token
   * Claude hands its own children (CLAUDE_CODE_MESSAGING_SOCKET/_TOKEN in the hook's environment,
   * with CLAUDE_PID naming this process): a route into this exact session without --channels.
   * The file is 0600; the token is a credential.
   */
  inbox?: ClaudeInbox;
}

export interface ClaudeInbox {
  socketPath: string;
  token: string;
}

export const SAFE_SESSION_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function reportPath(dir: string, claudePid: number): string {
  return join(dir, `claude-${claudePid}.session.json`);
}

export function writeSessionReport(dir: string, report: ClaudeSessionReport): void {
  writeFileDurably(reportPath(dir, report.claudePid), JSON.stringify(report));
}

export function readSessionReport(dir: string, claudePid: number): ClaudeSessionReport | undefined {
  try {
    const r = JSON.parse(readFileSync(reportPath(dir, claudePid), "utf8")) as ClaudeSessionReport;
    if (!SAFE_SESSION_ID.test(r.sessionId) || typeof r.transcriptPath !== "string") return undefined;
    const inbox = r.inbox;
    // A malformed inbox is no inbox: the seat then has only what else it proves.
    if (inbox && (typeof inbox.socketPath !== "string" || typeof inbox.token !== "string" || !inbox.token))
      return { ...r, inbox: undefined };
    return r;
  } catch {
    return undefined;
  }
}

/** The last turn boundary a hook saw: UserPromptSubmit starts a turn, Stop (or StopFailure) ends it. */
export interface ClaudeTurnReport {
  sessionId: string;
  promptId: string;
  state: "working" | "idle";
  event: string;
  claudePid: number;
  atMs: number;
}

export function turnReportPath(dir: string, claudePid: number): string {
  return join(dir, `claude-${claudePid}.turn.json`);
}

export function writeTurnReport(dir: string, report: ClaudeTurnReport): void {
  writeFileDurably(turnReportPath(dir, report.claudePid), JSON.stringify(report));
}

export function readTurnReport(dir: string, claudePid: number): ClaudeTurnReport | undefined {
  try {
    const r = JSON.parse(readFileSync(turnReportPath(dir, claudePid), "utf8")) as ClaudeTurnReport;
    return SAFE_SESSION_ID.test(r.sessionId) && (r.state === "working" || r.state === "idle") && Number.isFinite(r.atMs)
      ? r
      : undefined;
  } catch {
    return undefined;
  }
}
