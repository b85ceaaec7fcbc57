/**
 * `clankie lead token|revoke` as commander registrations (help per command); the work is in
 * lead.ts. Split from cli.ts to keep that file to the program's shape.
 */
import type { Command } from "commander";
import type { FleetAction, FleetCtx } from "./fleet-commands.js";

export function registerLeadCommands(program: Command, action: FleetAction): void {
  const lead = program.command("lead").description("owner: lead conversations");
  lead
    .command("token")
    .description(
      "mint a bearer token bound to one lead conversation, with the lines that connect Claude Code and Codex; " +
        "says when it replaces (and so disables) an older token; kept in the state dir, where clankie mcp reads it",
    )
    .requiredOption("--conversation <id>", "the conversation the token opens")
    .option(
      "--bridge-url <url>",
      "a replica's MCP URL for the printed bridge lines (repeat it or separate with commas; default: this state dir's controller)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .action(
      action(async (ctx: FleetCtx, o: { conversation: string; bridgeUrl?: string[] }) => {
        const { leadToken } = await import("./lead.js");
        const { parseUrls } = await import("../bridge/target.js");
        await leadToken(ctx.stateDir, ctx.controller, o.conversation, ctx.out, parseUrls(o.bridgeUrl));
      }),
    );
  lead
    .command("revoke")
    .description(
      "revoke the conversation's bearer token: every controller refuses it within seconds (its token cache lives 2 s)",
    )
    .requiredOption("--conversation <id>", "the conversation whose token stops working")
    .action(
      action(async (ctx: FleetCtx, o: { conversation: string }) => {
        const { leadRevoke } = await import("./lead.js");
        await leadRevoke(ctx.stateDir, ctx.controller, o.conversation, ctx.out);
      }),
    );
}
