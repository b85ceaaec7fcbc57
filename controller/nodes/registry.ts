/**
 * Machines and seats as their agents report them. A machine is online while its
 * heartbeats arrive; a seat belongs to exactly one machine.
 */
import { EventEmitter } from "node:events";
import { and, eq, notInArray, or } from "drizzle-orm";
import { machines, seats, type Machine, type SeatRowDb, type InputCapabilitiesRow } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { HeartbeatBatch } from "./heartbeat-batch.js";
import type { Seat } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { deliveryModeWire, seatKindWire, seatStatusWire } from "../../shared/verdicts.js";
import { seatId } from "../../shared/ids.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { quoteInput } from "../../shared/public-text.js";

/** A machine is offline after this many heartbeat intervals without one. */
export const MISSED_HEARTBEATS_OFFLINE = 3;

export interface MachineRegistration {
  machine: string;
  endpoint: string;
  agentToken: string;
  instanceId: string;
  platform: string;
  capabilityVersion: number;
  agentVersion: string;
  seats: Seat[];
}

/**
 * A seat kind this controller does not know is refused, never relabelled: a newer agent's
 * harness shown as `mailbox` would be offered mailbox semantics it does not have.
 */
export function knownSeatKind(s: Pick<Seat, "name" | "kind">): NonNullable<ReturnType<typeof seatKindWire.decode>> {
  const kind = seatKindWire.decode(s.kind);
  if (!kind)
    throw new InvalidArgumentError(
      `seat ${quoteInput(s.name)} reports seat kind ${s.kind}, which this controller does not know; the report was refused`,
    );
  return kind;
}

/** Refuses the whole report before anything is written when any seat's kind is unknown. */
export function assertKnownSeatKinds(wire: readonly Pick<Seat, "name" | "kind">[]): void {
  for (const s of wire) knownSeatKind(s);
}

export function seatRowFromWire(machine: string, s: Seat): typeof seats.$inferInsert {
  const caps: InputCapabilitiesRow = {
    deliveryModes: (s.inputCapabilities?.deliveryModes ?? [])
      .map((m) => deliveryModeWire.decode(m))
      .filter((m): m is "steer" | "queue" => m === "steer" || m === "queue"),
    interrupt: s.inputCapabilities?.interrupt ?? false,
    nextTurnOnly: s.inputCapabilities?.nextTurnOnly ?? false,
  };
  return {
    id: seatId(machine, s.name),
    machine,
    name: s.name,
    kind: knownSeatKind(s),
    status: seatStatusWire.decode(s.status) ?? "unknown",
    occupantId: s.occupantId,
    title: s.title,
    inputCapabilities: caps,
    cannotWork: s.cannotWork ? { reason: s.cannotWork.reason, detail: s.cannotWork.detail } : null,
    present: true,
    updatedAt: new Date(),
  };
}

export class Registry extends EventEmitter<{ changed: []; registered: [machine: string] }> {
  private readonly heartbeats: HeartbeatBatch;

  constructor(
    private readonly db: Db,
    readonly heartbeatIntervalMs: number,
    private readonly now: () => Date,
  ) {
    super();
    this.heartbeats = new HeartbeatBatch(db, now);
  }

  /** An agent's periodic heartbeat, written together with the others of its window (heartbeat-batch.ts). */
  periodicHeartbeat(machine: string, instanceId: string): Promise<boolean> {
    return this.heartbeats.beat(machine, instanceId);
  }

  async register(r: MachineRegistration): Promise<void> {
    assertKnownSeatKinds(r.seats);
    const at = this.now();
    await this.db.transaction(async (tx) => {
      const values = {
        name: r.machine,
        endpoint: r.endpoint,
        agentToken: r.agentToken,
        instanceId: r.instanceId,
        platform: r.platform,
        capabilityVersion: r.capabilityVersion,
        agentVersion: r.agentVersion,
        registeredAt: at,
        lastSeenAt: at,
      };
      await tx.insert(machines).values(values).onConflictDoUpdate({ target: machines.name, set: values });
      await replaceSeats(tx as unknown as Db, r.machine, r.seats);
    });
    this.emit("changed");
    this.emit("registered", r.machine);
  }

  /** False when this instance is not the machine's current one: the agent must register again. */
  async heartbeat(machine: string, instanceId: string): Promise<boolean> {
    const rows = await this.db
      .update(machines)
      .set({ lastSeenAt: this.now() })
      .where(and(eq(machines.name, machine), eq(machines.instanceId, instanceId)))
      .returning({ name: machines.name });
    return rows.length === 1;
  }

  async reportSeats(machine: string, instanceId: string, wire: Seat[]): Promise<boolean> {
    assertKnownSeatKinds(wire);
    const known = await this.heartbeat(machine, instanceId);
    if (!known) return false;
    await this.db.transaction(async (tx) => replaceSeats(tx as unknown as Db, machine, wire));
    this.emit("changed");
    return true;
  }

  async upsertSeat(machine: string, wire: Seat): Promise<void> {
    const row = seatRowFromWire(machine, wire);
    await this.db.insert(seats).values(row).onConflictDoUpdate({ target: seats.id, set: row });
    this.emit("changed");
  }

  async machines(): Promise<Machine[]> {
    return this.db.select().from(machines).orderBy(machines.name);
  }

  async machine(name: string): Promise<Machine | undefined> {
    const [row] = await this.db.select().from(machines).where(eq(machines.name, name));
    return row;
  }

  async seats(): Promise<SeatRowDb[]> {
    return this.db.select().from(seats).where(eq(seats.present, true)).orderBy(seats.id);
  }

  /** Seats matching an id ("machine/name") or a bare name; more than one means the name is ambiguous. */
  async findSeats(idOrName: string): Promise<SeatRowDb[]> {
    return this.db
      .select()
      .from(seats)
      .where(and(eq(seats.present, true), or(eq(seats.id, idOrName), eq(seats.name, idOrName))));
  }

  isOnline(m: Pick<Machine, "lastSeenAt">): boolean {
    return this.now().getTime() - m.lastSeenAt.getTime() <= this.heartbeatIntervalMs * MISSED_HEARTBEATS_OFFLINE;
  }
}

async function replaceSeats(db: Db, machine: string, wire: Seat[]): Promise<void> {
  const rows = wire.map((s) => seatRowFromWire(machine, s));
  for (const row of rows) {
    await db.insert(seats).values(row).onConflictDoUpdate({ target: seats.id, set: row });
  }
  const keep = rows.map((r) => r.id);
  await db
    .update(seats)
    .set({ present: false })
    .where(keep.length ? and(eq(seats.machine, machine), notInArray(seats.id, keep)) : eq(seats.machine, machine));
}
