/**
 * What the SessionStart hook tells the node agent about a Claude process's session: its id
 * and transcript path, filed under the Claude process's pid (the same key the channel socket
 * uses). A report is a hint to find the transcript, never authority.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurably } from "../../shared/durable-file.js";

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
