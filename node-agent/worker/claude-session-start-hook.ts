/**
 * Claude Code's SessionStart hook for Clankie seats. It files the session id and transcript
 * path for the node agent (keyed by the Claude process's pid), and, when the pane this Claude
 * runs in is linked to Clankie but Claude was started without the channel opt-in, prints a
 * systemMessage with the exact-session restart command. Print mode, other harnesses, unlinked
 * panes and unsafe ids get nothing. It never restarts anything itself.
 */
import { readFileSync } from "node:fs";
import { CHANNEL_SERVER_NAME } from "./claude-channel.js";
import { SAFE_SESSION_ID, writeSessionReport } from "../harnesses/claude-session-report.js";

export interface HookInput {
  session_id?: string;
  transcript_path?: string;
  cwd?: string;
  hook_event_name?: string;
  source?: string;
}

export interface ProcessRow {
  pid: number;
  argv: string[];
}

/** The hook's ancestors, nearest first; undefined when this platform cannot show them. */
export function ancestry(startPid: number, depth = 6): ProcessRow[] | undefined {
  if (process.platform !== "linux") return undefined;
  const rows: ProcessRow[] = [];
  let pid = startPid;
  for (let i = 0; i < depth && pid > 1; i++) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      rows.push({ pid, argv });
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      pid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return rows.length ? rows : undefined;
    }
  }
  return rows;
}

export function isClaude(argv: string[]): boolean {
  return argv.slice(0, 2).some((a) => /(^|\/)(claude|claude\.exe)$/.test(a));
}

function optedIn(argv: string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = inline ?? argv[i + 1] ?? "";
    if (flag === "--dangerously-load-development-channels" && value.split(/[ ,]/).includes(`server:${CHANNEL_SERVER_NAME}`)) return true;
    if (flag === "--channels" && /(^|[ ,])plugin:clankie-worker@/.test(value)) return true;
  }
  return false;
}

export type HookDecision = { claudePid?: number; message?: string };

/** Decides what the hook says; pure, so each case is testable without a Claude. */
export function decideSessionStart(input: HookInput, env: NodeJS.ProcessEnv, ancestors: ProcessRow[] | undefined): HookDecision {
  if (input.hook_event_name !== "SessionStart" || !input.session_id || !SAFE_SESSION_ID.test(input.session_id)) return {};
  const linked = Boolean(env.HERDR_PANE_ID || env.TMUX_PANE);
  if (!ancestors) {
    return linked ? { message: "Clankie cannot confirm this session's channel: the Claude process could not be observed on this platform." } : {};
  }
  const claude = ancestors.find((r) => isClaude(r.argv));
  if (!claude) return {};
  if (claude.argv.includes("-p") || claude.argv.includes("--print")) return {};
  if (!linked || optedIn(claude.argv)) return { claudePid: claude.pid };
  return {
    claudePid: claude.pid,
    message:
      `Clankie cannot deliver messages to this session: Claude was started without the Clankie channel. ` +
      `Restart this exact session with: claude --resume ${input.session_id} --dangerously-load-development-channels server:${CHANNEL_SERVER_NAME}`,
  };
}

export async function runSessionStartHook(reportDir: string | undefined, stdinText: string, env: NodeJS.ProcessEnv): Promise<string> {
  let input: HookInput;
  try {
    input = JSON.parse(stdinText) as HookInput;
  } catch {
    return "";
  }
  const decision = decideSessionStart(input, env, ancestry(process.ppid));
  if (reportDir && decision.claudePid && input.session_id && input.transcript_path) {
    try {
      writeSessionReport(reportDir, { sessionId: input.session_id, transcriptPath: input.transcript_path, cwd: input.cwd ?? "", source: input.source ?? "", claudePid: decision.claudePid, atMs: Date.now() });
    } catch {
      // The notice below must survive a failed report (VUH-1867).
    }
  }
  return decision.message ? JSON.stringify({ systemMessage: decision.message }) : "";
}
