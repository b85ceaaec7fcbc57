/**
 * `clankie mailbox read|mcp` and `clankie worker HELPER` as commander registrations: the worker's
 * side of a seat, run by the seat's harness (or its owner), never by the node agent. The work is in
 * mailbox.ts and in worker/ (the in-harness tools), loaded only by the command that runs it.
 */
import type { Command } from "commander";
import { InvalidArgumentError } from "../shared/errors.js";
import { ending, type Run } from "./command-context.js";

export function registerWorkerCommands(program: Command, run: Run): void {
  const mailbox = program.command("mailbox").description("worker: the worker's side of a mailbox seat");
  mailbox
    .command("read")
    .description("print the unread messages of a mailbox seat (and mark them read)")
    .argument("<name>", "the mailbox seat")
    .option("--peek", "do not mark them read")
    .option("--agent-state-dir <dir>", "the node agent's state dir (default: <state dir>/agent)")
    .action(
      run("info", async (ctx, name: string, o: { peek?: boolean; agentStateDir?: string }) => {
        const { mailboxRead } = await import("./mailbox.js");
        mailboxRead(ctx.agentStateDir(o.agentStateDir), name, o.peek ?? false, ctx.out);
      }),
    );
  mailbox
    .command("mcp")
    .description("a worker-side MCP server on stdio with read_mailbox (give it to the worker's harness)")
    .argument("<name>", "the mailbox seat")
    .option("--agent-state-dir <dir>", "the node agent's state dir (default: <state dir>/agent)")
    .action(
      run("info", async (ctx, name: string, o: { agentStateDir?: string }) => {
        const { mailboxMcp } = await import("./mailbox.js");
        await mailboxMcp(ctx.agentStateDir(o.agentStateDir), name);
        ending.keepServing = true;
      }),
    );

  program
    .command("worker")
    .description(
      "worker-side helpers: mcp (any hired harness), and claude-channel, session-start-hook, turn-hook, question-hook (Claude seats)",
    )
    .argument("<helper>", "mcp | claude-channel | session-start-hook | turn-hook | question-hook")
    .option("--agent-state-dir <dir>", "mcp, question-hook: the node agent's state dir (default: <state dir>/agent)")
    .option(
      "--wait-seconds <n>",
      "question-hook: how long to wait for the hiring lead's answer before the owner's dialog (default 300)",
    )
    .option("--channel-dir <dir>", "claude-channel: the directory the node agent feeds")
    .option("--report-dir <dir>", "the hooks: where they file the session and turn state")
    .addHelpText(
      "after",
      "\nmcp: a worker-side MCP server on stdio with message_clankie and message_clankie_status (and, when the owner turned peers on, list_fleet_seats and message_peer); the node agent proves from the kernel that the caller runs in a seat's pane.",
    )
    .action(
      run(
        "info",
        async (
          ctx,
          helper: string,
          o: { agentStateDir?: string; channelDir?: string; reportDir?: string; waitSeconds?: string },
        ) => {
          if (helper === "mcp") {
            const { serveWorkerMcp } = await import("../worker/fleet-mcp.js");
            await serveWorkerMcp({ agentStateDir: ctx.agentStateDir(o.agentStateDir) });
            ending.keepServing = true;
            return;
          }
          const { runWorkerCommand } = await import("../worker/claude-cli.js");
          ending.keepServing = await runWorkerCommand(helper, {
            ...o,
            agentStateDir: helper === "question-hook" ? ctx.agentStateDir(o.agentStateDir) : undefined,
          }).catch((e: Error) => {
            // Its own usage errors are the user's to fix, not internal faults.
            throw /^(usage|clankie worker)/.test(e.message) ? new InvalidArgumentError(e.message) : e;
          });
        },
      ),
    );
}
