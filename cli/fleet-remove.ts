/**
 * `clankie fleet remove NAME [--yes]` (issue 37 item 1): shows what goes (the machine, its state,
 * its seats), asks, then removes it through FleetService.RemoveMachine. The answer is read from
 * stdin, terminal or not, so `echo y |` works; no answer (end of input) removes nothing.
 */
import { createInterface } from "node:readline/promises";
import { create } from "@bufbuild/protobuf";
import { ListFleetRequestSchema, RemoveMachineRequestSchema } from "../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { ListSeatsRequestSchema } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { ErrorCode, FleetError, InvalidArgumentError } from "../shared/errors.js";
import { visibleInline } from "../shared/terminal-text.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, type OutputOptions } from "./output.js";
import type { FleetFlags } from "./fleet-flags.js";

async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  process.stderr.write(question);
  // End of input before a line is "no": a script without --yes removes nothing.
  const ended = new Promise<string>((resolve) => rl.once("close", () => resolve("")));
  const answer = await Promise.race([rl.question(""), ended]);
  rl.close();
  return /^y(es)?$/i.test(answer.trim());
}

export async function fleetRemove(name: string | undefined, f: FleetFlags, out: OutputOptions): Promise<number> {
  if (!name) throw new InvalidArgumentError("usage: clankie fleet remove NAME [--yes]");
  const { fleet, status } = ownerClients(f.stateDir, f.controller);
  if (!f.yes) {
    const [machines, seats] = await Promise.all([
      fleet.listFleet(create(ListFleetRequestSchema, {})),
      status.listSeats(create(ListSeatsRequestSchema, {})),
    ]);
    const machine = machines.machines.find((m) => m.name === name);
    // Online and not revoked is refused by the controller: asking first would only waste the answer.
    if (machine && machine.status !== "online") {
      const own = seats.seats.filter((s) => s.machine === name).map((s) => visibleInline(s.id));
      const its = own.length ? ` and its ${own.length} seat(s): ${own.join(", ")}` : ", which has no seats";
      const question = `Remove machine ${visibleInline(name)} (${machine.status})${its}? `;
      if (!(await confirmed(`${question}Receipts stay; the machine needs a new join token to come back. [y/N] `))) {
        const why = "not confirmed; pass --yes to remove without asking";
        throw new FleetError(ErrorCode.FailedPrecondition, `${name} was not removed (${why})`);
      }
    }
  }
  const res = await fleet.removeMachine(create(RemoveMachineRequestSchema, { machine: name }));
  const seats = res.seatIds.length ? `: ${res.seatIds.map(visibleInline).join(", ")}` : "";
  emit(
    out,
    { machine: res.machine, was: res.was, seatIds: res.seatIds, connectionsCut: res.connectionsCut },
    () =>
      `${visibleInline(res.machine)} removed (it was ${res.was}), with ${res.seatIds.length} seat(s)${seats}; ` +
      "its receipts stay (clankie receipts list)",
  );
  return 0;
}
