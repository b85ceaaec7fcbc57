/**
 * `clankie fleet remove` and `clankie seat rm` (issue 37 item 1): the owner forgets what is gone.
 * A machine goes with its seats, its registration and its certificates, so it cannot come back
 * without a new join token; a seat goes alone. Receipts, fences and settlements name seats by
 * id and are never touched: their history stays readable with `clankie receipts`.
 */
import { and, count, eq, inArray, isNull, or } from "drizzle-orm";
import { ErrorCode, FleetError, InvalidArgumentError } from "../../shared/errors.js";
import { UNRESOLVED_STATES } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { deliveryReceipts, machineCerts, machines, seats } from "../db/schema.js";
import type { Registry } from "../nodes/registry.js";

export interface RemovedMachine {
  seatIds: string[];
  was: "revoked" | "offline";
}

export async function removeMachine(db: Db, registry: Registry, name: string): Promise<RemovedMachine> {
  if (!name) throw new InvalidArgumentError("name the machine to remove");
  return db.transaction(async (tx) => {
    // Locked so that a heartbeat arriving now waits: it cannot bring the machine online
    // between the check and the delete.
    const [m] = await tx.select().from(machines).where(eq(machines.name, name)).for("update");
    const certs = await tx.select().from(machineCerts).where(eq(machineCerts.machine, name));
    if (!m && certs.length === 0) {
      throw new FleetError(ErrorCode.NotFound, `no machine named ${name} is enrolled or registered`);
    }
    const revoked = certs.length > 0 && certs.every((c) => c.revokedAt !== null);
    if (m && registry.isOnline(m) && !revoked) {
      const how = `revoke it first (clankie fleet revoke ${name}), or stop its agent and remove it once it is offline`;
      throw new FleetError(ErrorCode.FailedPrecondition, `${name} is online and not revoked: ${how}`);
    }
    const gone = await tx.delete(seats).where(eq(seats.machine, name)).returning({ id: seats.id });
    await tx.delete(machines).where(eq(machines.name, name));
    await tx.delete(machineCerts).where(eq(machineCerts.machine, name));
    return { seatIds: gone.map((s) => s.id).sort(), was: revoked ? "revoked" : "offline" };
  });
}

export interface RemovedSeat {
  seatId: string;
  /** Unsettled delivery receipts that still name the seat (kept). */
  unresolved: number;
}

export async function removeSeat(db: Db, registry: Registry, ref: string): Promise<RemovedSeat> {
  if (!ref) throw new InvalidArgumentError("name the seat to remove (MACHINE/NAME)");
  const found = await db
    .select()
    .from(seats)
    .where(or(eq(seats.id, ref), eq(seats.name, ref)));
  const exact = found.filter((s) => s.id === ref);
  const candidates = exact.length ? exact : found;
  if (candidates.length === 0) {
    throw new FleetError(ErrorCode.UnknownSeat, `no seat ${ref} (clankie seat list shows them)`);
  }
  if (candidates.length > 1) {
    const ids = candidates.map((s) => s.id).join(", ");
    throw new InvalidArgumentError(`seat name ${ref} is ambiguous: ${ids}; name it as MACHINE/NAME`);
  }
  const seat = candidates[0]!;
  const machine = await registry.machine(seat.machine);
  const [cert] = await db
    .select({ serial: machineCerts.serial })
    .from(machineCerts)
    .where(and(eq(machineCerts.machine, seat.machine), isNull(machineCerts.revokedAt)));
  // An online agent reports its seats again on its next change: removing one it still reports would not hold.
  if (seat.present && machine && registry.isOnline(machine) && cert) {
    const why = "a seat in a pane goes when its harness leaves the pane; remove seats of offline or revoked machines";
    const what = `${seat.id} is still reported by its online machine ${seat.machine}`;
    throw new FleetError(ErrorCode.FailedPrecondition, `${what}: ${why}`);
  }
  await db.delete(seats).where(eq(seats.id, seat.id));
  registry.emit("changed");
  const [open] = await db
    .select({ n: count() })
    .from(deliveryReceipts)
    .where(and(eq(deliveryReceipts.seatId, seat.id), inArray(deliveryReceipts.state, [...UNRESOLVED_STATES])));
  return { seatId: seat.id, unresolved: open?.n ?? 0 };
}
