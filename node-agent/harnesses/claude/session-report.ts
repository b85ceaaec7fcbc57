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
    return SAFE_SESSION_ID.test(r.sessionId) && typeof r.transcriptPath === "string" ? r : undefined;
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
