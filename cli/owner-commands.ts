/**
 * The owner's seat, seat-delivery, hire-receipt and peers commands as commander registrations
 * (help per command); the work is in seat.ts, seat-delivery.ts, hire-receipt.ts and peers.ts.
 * Split from cli.ts to keep that file to the program's shape.
 */
import type { Command } from "commander";
import { ExitCode } from "./exit-codes.js";
import type { FleetAction, FleetCtx } from "./fleet-commands.js";

export function registerOwnerCommands(program: Command, action: FleetAction): void {
  const seat = program.command("seat").description("owner: add, list or remove seats");
  seat
    .command("add")
    .description("add a mailbox seat (harness seats are discovered from their panes)")
    .argument("<kind>", "the seat kind: mailbox")
    .argument("<name>", "the seat's name on its machine")
    .option("--machine <name>", "the machine that keeps the mailbox (default: the only one)")
    .option("--title <text>", "a title shown in list_seats and the dashboard")
    .action(
      action(async (ctx: FleetCtx, kind: string, name: string, o: { machine?: string; title?: string }) => {
        const { seatAdd } = await import("./seat.js");
        await seatAdd(ctx.stateDir, ctx.controller, kind, name, o, ctx.out);
      }),
    );
  seat
    .command("list")
    .description("every seat: kind, status, whether its agent is online, delivery modes, unresolved receipts")
    .action(
      action(async (ctx: FleetCtx) => {
        const { seatList } = await import("./seat.js");
        await seatList(ctx.stateDir, ctx.controller, ctx.out);
      }),
    );

  seat
    .command("rm")
    .alias("remove")
    .description("forget a seat of an offline or revoked machine; receipts naming it stay (seat remove is the same)")
    .argument("<seat>", "the seat: MACHINE/NAME, or NAME when only one seat has it")
    .action(
      action(async (ctx: FleetCtx, ref: string) => {
        const { seatRemove } = await import("./seat.js");
        await seatRemove(ctx.stateDir, ctx.controller, ref, ctx.out);
      }),
    );

  const seatDelivery = program.command("seat-delivery").description("owner: unresolved deliveries and settling them");
  seatDelivery
    .command("list")
    .description("unresolved deliveries with id, conversation, seat, state and age")
    .action(
      action(async (ctx: FleetCtx) => {
        const { seatDeliveryList } = await import("./seat-delivery.js");
        await seatDeliveryList(ctx.stateDir, ctx.controller, ctx.out);
      }),
    );
  seatDelivery
    .command("settle")
    .description("settle one unresolved delivery as abandoned-unknown; nothing is ever resent")
    .argument("<id>", "the delivery id")
    .argument("<disposition>", "abandoned-unknown")
    .option("--conversation <id>", "the delivery's conversation", "global-default")
    .action(
      action(async (ctx: FleetCtx, id: string, disposition: string, o: { conversation: string }) => {
        const { seatDeliverySettle } = await import("./seat-delivery.js");
        await seatDeliverySettle(ctx.stateDir, ctx.controller, id, disposition, o.conversation, ctx.out);
      }),
    );

  const hireReceipt = program.command("hire-receipt").description("owner: unresolved hires and settling them");
  hireReceipt
    .command("list")
    .description("unresolved hires with id, conversation, machine, harness and age (--all: settled ones too)")
    .option("--all", "every hire, spawned, failed and settled too (the newest 1000)")
    .option(
      "--state <state>",
      "only hires in this state (looks at every hire): reserved, launching, spawned, failed, start_unconfirmed, delivery_unconfirmed, settled-not-launched, abandoned-unknown",
    )
    .action(
      action(async (ctx: FleetCtx, o: { all?: boolean; state?: string }) => {
        const { hireReceiptList } = await import("./hire-receipt.js");
        await hireReceiptList(ctx.stateDir, ctx.controller, ctx.out, o.all === true, o.state);
        return process.exitCode === 1 ? ExitCode.Failed : ExitCode.Ok;
      }),
    );
  hireReceipt
    .command("settle")
    .description("settle one unresolved hire; its hire id stays refused either way")
    .argument("<id>", "the hire id")
    .argument(
      "<disposition>",
      "not-launched (only with a fresh census proving nothing from the hire exists) | abandoned-unknown (keeps the evidence)",
    )
    .option("--conversation <id>", "the hire's conversation (default: the one on record)")
    .action(
      action(async (ctx: FleetCtx, id: string, disposition: string, o: { conversation?: string }) => {
        const { hireReceiptSettle } = await import("./hire-receipt.js");
        await hireReceiptSettle(ctx.stateDir, ctx.controller, id, disposition, o.conversation, ctx.out);
        return process.exitCode === 1 ? ExitCode.Failed : ExitCode.Ok;
      }),
    );

  program
    .command("peers")
    .description("owner: let this fleet's workers message each other (list_fleet_seats, message_peer); off by default")
    .argument("<switch>", "on | off")
    .action(
      action(async (ctx: FleetCtx, sw: string) => {
        const { peersSwitch } = await import("./peers.js");
        await peersSwitch(ctx.stateDir, ctx.controller, sw, ctx.out);
      }),
    );
}
