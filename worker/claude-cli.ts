/**
 * The worker-side `clankie worker …` commands for Claude seats: `claude-channel` (the stdio
 * MCP channel server Claude spawns), `session-start-hook` (Claude's SessionStart hook) and
 * `turn-hook` (its UserPromptSubmit and Stop hooks) and `question-hook` (its PreToolUse hook for
 * AskUserQuestion: the hiring lead's answer as hook JSON).
 */
import { serveClaudeChannel } from "./claude-channel.js";
import { runSessionStartHook } from "./claude-session-start-hook.js";
import { runTurnHook } from "./claude-turn-hook.js";
import { DEFAULT_WAIT_SECONDS, runQuestionHook } from "./claude-question-hook.js";

export const WORKER_USAGE = `  clankie worker claude-channel --channel-dir DIR        Claude channel MCP server (stdio), fed by the node agent
  clankie worker session-start-hook [--report-dir DIR]  Claude SessionStart hook: files the session, warns without the channel
  clankie worker turn-hook --report-dir DIR             Claude UserPromptSubmit/Stop hook: files whether a turn is running
  clankie worker question-hook --agent-state-dir DIR [--wait-seconds N]
                                                        Claude PreToolUse hook (matcher AskUserQuestion): the hiring lead's answer, else the owner's dialog`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Runs one worker command; true when it keeps serving (the caller must not exit). */
export async function runWorkerCommand(
  sub: string | undefined,
  flags: {
    channelDir?: string | undefined;
    reportDir?: string | undefined;
    agentStateDir?: string | undefined;
    waitSeconds?: string | undefined;
  },
): Promise<boolean> {
  if (sub === "claude-channel") {
    if (!flags.channelDir) throw new Error("clankie worker claude-channel needs --channel-dir DIR");
    await serveClaudeChannel(flags.channelDir);
    return true;
  }
  if (sub === "session-start-hook") {
    const out = await runSessionStartHook(flags.reportDir, await readStdin(), process.env);
    if (out) process.stdout.write(out + "\n");
    return false;
  }
  if (sub === "turn-hook") {
    await runTurnHook(flags.reportDir, await readStdin());
    return false;
  }
  if (sub === "question-hook") {
    // Never exit 2 here: for PreToolUse that blocks the tool and shows the model stderr. A bad flag
    // falls back to the default wait; any failure prints nothing, so the owner's dialog answers.
    let wait = flags.waitSeconds === undefined ? DEFAULT_WAIT_SECONDS : Number(flags.waitSeconds);
    if (!Number.isInteger(wait) || wait < 1) {
      process.stderr.write(
        `clankie worker question-hook: --wait-seconds must be a whole number of seconds, at least 1; waiting ${DEFAULT_WAIT_SECONDS}\n`,
      );
      wait = DEFAULT_WAIT_SECONDS;
    }
    const out = await runQuestionHook(flags.agentStateDir, await readStdin(), wait).catch(() => "");
    if (out) process.stdout.write(out + "\n");
    return false;
  }
  throw new Error(`usage:\n${WORKER_USAGE}`);
}
