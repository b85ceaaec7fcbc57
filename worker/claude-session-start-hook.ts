/**
 * Claude Code's SessionStart hook for Clankie seats. It files the session id and transcript
 * path for the node agent (keyed by the Claude process's pid), with the session's own inbox
 * socket where Claude (2.1.224+) hands it to its children, and, when the pane this Claude runs
 * in is linked to Clankie but Claude has neither the channel opt-in nor an inbox, prints a
 * systemMessage with the exact-session restart command. Print mode, other harnesses, unlinked
 * panes and unsafe ids get nothing. It never restarts anything itself. The Claude process is
 * found among the hook's ancestors through the ProofProvider (Linux /proc, macOS ps, Windows
 * Win32_Process), past any intermediary shell (`sh -c`, cmd.exe, PowerShell) or npx wrapper.
 */
import { CHANNEL_SERVER_NAME } from "../node-agent/harnesses/claude/channel-wire.js";
import type { ProofProvider } from "../node-agent/proofs/provider.js";
import { isClaude, optedIn } from "../node-agent/harnesses/claude/process.js";
import { selectProofProvider } from "../node-agent/proofs/select.js";
import {
  SAFE_SESSION_ID,
  writeSessionReport,
  type ClaudeInbox,
} from "../node-agent/harnesses/claude/session-report.js";

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

/** The hook's ancestors, nearest first; undefined when the provider cannot show them. */
export async function ancestry(
  provider: ProofProvider,
  startPid: number,
  depth = 6,
): Promise<ProcessRow[] | undefined> {
  const start = await provider.identify(startPid);
  if (!start.known) return undefined;
  const chain = await provider.ancestry(start.value);
  if (!chain.known) return undefined;
  const rows: ProcessRow[] = [];
  for (const p of chain.value.chain.slice(0, depth)) {
    const argv = await provider.commandLine(p);
    // An ancestor whose command line is withheld ends what can be seen: never skipped over.
    if (!argv.known) return rows.length ? rows : undefined;
    rows.push({ pid: p.pid, argv: argv.value.argv });
  }
  return rows;
}

export { isClaude };

export type HookDecision = { claudePid?: number; message?: string; inbox?: ClaudeInbox };

/**
 * The session's own inbox socket, as Claude hands it to its children (2.1.224+): only when
 * CLAUDE_PID names the Claude this hook runs under and CLAUDE_CODE_SESSION_ID, where given, is
 * the session starting, so the route is bound to this exact process and session.
 */
export function inboxOf(env: NodeJS.ProcessEnv, claudePid: number, sessionId: string): ClaudeInbox | undefined {
  const socketPath = env.CLAUDE_CODE_MESSAGING_SOCKET;
  const token = env.CLAUDE_CODE_MESSAGING_TOKEN;
  if (!socketPath || !token || env.CLAUDE_PID !== String(claudePid)) return undefined;
  if (env.CLAUDE_CODE_SESSION_ID && env.CLAUDE_CODE_SESSION_ID !== sessionId) return undefined;
  return { socketPath, token };
}

/** Decides what the hook says; pure, so each case is testable without a Claude. */
export function decideSessionStart(
  input: HookInput,
  env: NodeJS.ProcessEnv,
  ancestors: ProcessRow[] | undefined,
): HookDecision {
  if (input.hook_event_name !== "SessionStart" || !input.session_id || !SAFE_SESSION_ID.test(input.session_id))
    return {};
  const linked = Boolean(env.HERDR_PANE_ID || env.TMUX_PANE);
  if (!ancestors) {
    return linked
      ? {
          message:
            "Clankie cannot confirm this session's channel: the Claude process could not be observed on this platform.",
        }
      : {};
  }
  const claude = ancestors.find((r) => isClaude(r.argv));
  if (!claude) return {};
  if (claude.argv.includes("-p") || claude.argv.includes("--print")) return {};
  const inbox = inboxOf(env, claude.pid, input.session_id);
  // With its own inbox socket the session is reachable as it is: no restart is asked for.
  if (!linked || optedIn(claude.argv) || inbox) return { claudePid: claude.pid, ...(inbox ? { inbox } : {}) };
  return {
    claudePid: claude.pid,
    message:
      `Clankie cannot deliver messages to this session: Claude was started without the Clankie channel. ` +
      // From the clankie-worker plugin (Claude sets CLAUDE_PLUGIN_ROOT) the channel is the plugin's, not a server:clankie-seat.
      `Restart this exact session with: claude --resume ${input.session_id} --dangerously-load-development-channels ${env.CLAUDE_PLUGIN_ROOT ? "plugin:clankie-worker@clankie" : `server:${CHANNEL_SERVER_NAME}`}`,
  };
}

export async function runSessionStartHook(
  reportDir: string | undefined,
  stdinText: string,
  env: NodeJS.ProcessEnv,
  provider?: ProofProvider,
): Promise<string> {
  let input: HookInput;
  try {
    input = JSON.parse(stdinText) as HookInput;
  } catch {
    return "";
  }
  const facts = provider ?? selectProofProvider();
  let ancestors: ProcessRow[] | undefined;
  try {
    ancestors = await ancestry(facts, process.ppid);
  } finally {
    // A provider this hook made may hold a long-lived reader (Windows' PowerShell host).
    if (!provider) facts.close?.();
  }
  const decision = decideSessionStart(input, env, ancestors);
  if (reportDir && decision.claudePid && input.session_id && input.transcript_path) {
    try {
      writeSessionReport(reportDir, {
        sessionId: input.session_id,
        transcriptPath: input.transcript_path,
        cwd: input.cwd ?? "",
        source: input.source ?? "",
        claudePid: decision.claudePid,
        atMs: Date.now(),
        ...(decision.inbox ? { inbox: decision.inbox } : {}),
      });
    } catch {
      // The notice below must survive a failed report (VUH-1867).
    }
  }
  return decision.message ? JSON.stringify({ systemMessage: decision.message }) : "";
}
