/**
 * The worker-side `clankie worker …` commands for Claude seats: `claude-channel` (the stdio
 * MCP channel server Claude spawns), `session-start-hook` (Claude's SessionStart hook) and
 * `turn-hook` (its UserPromptSubmit and Stop hooks).
 */
import { serveClaudeChannel } from "./claude-channel.js";
import { runSessionStartHook } from "./claude-session-start-hook.js";
import { runTurnHook } from "./claude-turn-hook.js";

export const WORKER_USAGE = `  clankie worker claude-channel --channel-dir DIR        Claude channel MCP server (stdio), fed by the node agent
  clankie worker session-start-hook [--report-dir DIR]  Claude SessionStart hook: files the session, warns without the channel
  clankie worker turn-hook --report-dir DIR             Claude UserPromptSubmit/Stop hook: files whether a turn is running`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Runs one worker command; true when it keeps serving (the caller must not exit). */
export async function runWorkerCommand(sub: string | undefined, flags: { channelDir?: string | undefined; reportDir?: string | undefined }): Promise<boolean> {
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
    runTurnHook(flags.reportDir, await readStdin());
    return false;
  }
  throw new Error(`usage:\n${WORKER_USAGE}`);
}
