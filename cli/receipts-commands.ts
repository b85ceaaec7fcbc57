/**
 * `clankie receipts list|show` as commander registrations (help per command); the work is in
 * receipts.ts. Split from cli.ts to keep that file to the program's shape.
 */
import type { Command } from "commander";
import type { FleetAction, FleetCtx } from "./fleet-commands.js";
import type { ReceiptFilters } from "./receipts.js";
import { ReceiptState } from "../shared/verdicts.js";

export function registerReceiptsCommands(program: Command, action: FleetAction): void {
  const receipts = program
    .command("receipts")
    .description("owner: delivery receipts, newest first: list with filters, show one with its proofs");
  receipts
    .command("list")
    .alias("ls")
    .description("delivery receipts, newest first, filtered and paged")
    .option("--id <prefix>", "only receipts whose id starts with this (4 characters or more)")
    .option("--seat <seat>", "only this seat (MACHINE/NAME)")
    .option("--conversation <id>", "only this lead conversation")
    .option("--state <state>", `only this state: ${Object.values(ReceiptState).join(", ")}`)
    .option("--unresolved", "only receipts not yet settled (dispatching, unconfirmed, uncertain)")
    .option("--since <when>", "only receipts since a duration ago (90s, 15m, 2h, 7d) or a time (2026-12-05T10:00Z)")
    .option("--limit <n>", "at most this many per page, 1-1000 (default 50)")
    .option("--page-token <token>", "the next page: the token the previous page printed (-o json: nextPageToken)")
    .addHelpText("after", "\nPaging keeps its place while receipts arrive: pass the same filters with --page-token.")
    .action(
      action(async (ctx: FleetCtx, o: ReceiptFilters) => {
        const { receiptsList } = await import("./receipts.js");
        await receiptsList(ctx.stateDir, ctx.controller, o, ctx.out);
      }),
    );
  receipts
    .command("show")
    .alias("get")
    .description("one receipt: its state and reason, proofs, fence and settlements (as the dashboard's detail)")
    .argument("<id>", "the delivery id, or its start when only one receipt has it (as receipts list --id)")
    .action(
      action(async (ctx: FleetCtx, id: string) => {
        const { receiptsShow } = await import("./receipts.js");
        await receiptsShow(ctx.stateDir, ctx.controller, id, ctx.out);
      }),
    );
}
