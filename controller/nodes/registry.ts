/**
 * Machines and seats as their agents report them. A machine is online while its
 * heartbeats arrive; a seat belongs to exactly one machine.
 */
import { EventEmitter } from "node:events";
import { and, count, eq, gte, notInArray, or, sql } from "drizzle-orm";
import { machines, seats, type Machine, type SeatRowDb, type InputCapabilitiesRow } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { GROWN_FLEET_BATCH_WINDOW_MS, HEARTBEAT_BATCH_WINDOW_MS, HeartbeatBatch } from "./heartbeat-batch.js";
import type { Seat } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { deliveryModeWire, seatKindWire, seatStatusWire } from "../../shared/verdicts.js";
import { seatId } from "../../shared/ids.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { quoteInput } from "../../shared/public-text.js";

/** A machine is offline after this many heartbeat intervals without one. */
export const MISSED_HEARTBEATS_OFFLINE = 3;

/**
 * The heartbeats per second the whole fleet sends (Nomad's max_heartbeats_per_second): past
 * HEARTBEATS_PER_S × base interval machines, each agent's interval grows so the controller's
 * load from heartbeats stays flat. Measured (issue 36, n100 profile): a heartbeat costs the
 * controller ~2 ms of CPU all in (HTTP/2 stream, Connect handler, garbage), so 25 a second was
 * ~5% of a core on its own; 10 a second leaves room under the 5% goal. Rule 55 does not rest on
 * them once the interval has grown (isOnline, the reverse links' pings).
 */
export const HEARTBEATS_PER_S = 10;
/**
 * The longest interval an agent is told. Heartbeats then only carry the replica list and the
 * "register again" answer, and bound how long a linked machine that stopped heartbeating is
 * still shown online (three intervals).
 */
export const MAX_HEARTBEAT_INTERVAL_MS = 120_000;
/** How often the fleet's size is counted again (it sets the interval), at most. */
const FLEET_COUNT_MS = 5_000;

/**
 * The interval for a fleet of `machines` agents: max(base, machines / HEARTBEATS_PER_S), in whole
 * seconds once past the base, capped. A fleet the base interval serves is told exactly the base:
 * rounding a 1-machine fleet up to 1 s had made a 500 ms base "grown", which turned on the cut of
 * silent links and the link-based judgement in every small fleet (the fences and liveness tests).
 */
export function heartbeatIntervalFor(baseMs: number, machines: number): number {
  const scaledMs = (machines * 1000) / HEARTBEATS_PER_S;
  if (scaledMs <= baseMs) return baseMs;
  return Math.min(Math.max(baseMs, MAX_HEARTBEAT_INTERVAL_MS), Math.ceil(scaledMs / 1000) * 1000);
}

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
  private fleetSize = 0;
  private countedAt = -Infinity;
  private counting = false;
  /** The longest interval told to agents lately, and until when it still judges them (see judgedIntervalMs). */
  private judged: { ms: number; until: number };
  /** Whether this replica holds a live reverse link to the machine (set by main once the links exist). */
  private linkAlive: ((machine: string) => boolean) | undefined;

  constructor(
    private readonly db: Db,
    /** The interval of a small fleet; rule 55's 10 s bound is computed from it. */
    readonly baseHeartbeatIntervalMs: number,
    private readonly now: () => Date,
  ) {
    super();
    this.judged = { ms: baseHeartbeatIntervalMs, until: 0 };
    // A small fleet's heartbeats still judge liveness, so their write waits as little as before.
    this.heartbeats = new HeartbeatBatch(db, now, () =>
      this.judged.ms > this.baseHeartbeatIntervalMs ? GROWN_FLEET_BATCH_WINDOW_MS : HEARTBEAT_BATCH_WINDOW_MS,
    );
  }

  /**
   * Judges liveness by the reverse links as well (needed once the interval has grown past the
   * base: rule 55's 10 s then rests on the link's pings, reverse-links.ts).
   */
  judgeLinks(alive: (machine: string) => boolean): void {
    this.linkAlive = alive;
  }

  /** The interval agents are told now: it grows with the fleet (heartbeatIntervalFor). */
  get heartbeatIntervalMs(): number {
    this.countFleet();
    const ms = heartbeatIntervalFor(this.baseHeartbeatIntervalMs, this.fleetSize);
    const t = this.now().getTime();
    // An agent keeps the interval it was told until its next heartbeat: a shrinking fleet
    // judges by the longer one for three of its intervals more.
    if (ms >= this.judged.ms || t > this.judged.until)
      this.judged = { ms, until: t + ms * (MISSED_HEARTBEATS_OFFLINE + 1) };
    return ms;
  }

  /** The interval a machine's heartbeats are judged by: the longest told lately. */
  get judgedIntervalMs(): number {
    return Math.max(this.judged.ms, this.heartbeatIntervalMs);
  }

  /** Counts the machines again at most once a FLEET_COUNT_MS, in the background. */
  private countFleet(): void {
    const t = performance.now();
    if (this.counting || t - this.countedAt < FLEET_COUNT_MS) return;
    this.counting = true;
    this.countedAt = t;
    this.db
      .select({ n: count() })
      .from(machines)
      .then(([row]) => (this.fleetSize = row?.n ?? this.fleetSize))
      .catch(() => {}) // An unreadable journal keeps the last count.
      .finally(() => (this.counting = false));
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

  /**
   * Whether one of `names` is online (isOnline's rule), in one statement reading at most one row:
   * the health probe's "agents" question every 2 s. Reading every machine cost a 1,000-row read and
   * its mapping each time, and reading them one at a time until one was online cost 1,000 reads
   * when none was (issue 36). The names travel as one JSON parameter, not one placeholder each.
   */
  async anyOnline(names: Iterable<string>): Promise<boolean> {
    const all = [...names];
    if (all.length === 0) return false;
    const t = this.now().getTime();
    const fresh = gte(machines.lastSeenAt, new Date(t - this.baseHeartbeatIntervalMs * MISSED_HEARTBEATS_OFFLINE));
    const judged = gte(machines.lastSeenAt, new Date(t - this.judgedIntervalMs * MISSED_HEARTBEATS_OFFLINE));
    const linked = all.filter((m) => this.linkAlive?.(m) === true);
    // Every name linked (the probe's case): the grown interval's bound alone; else each its own.
    const online =
      linked.length === all.length
        ? and(named(all), judged)
        : or(and(named(all), fresh), linked.length ? and(named(linked), judged) : undefined);
    const rows = await this.db.select({ name: machines.name }).from(machines).where(online).limit(1);
    return rows.length > 0;
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

  /**
   * Rule 55: offline within 10 s of the agent's death. A heartbeat within three base intervals
   * is enough (the small fleet's rule, unchanged). Past that, while the grown interval says the
   * next heartbeat is not late yet, the machine is online only while this replica's reverse link
   * to it is alive: a dead agent's link closes, and a frozen one's is cut by its missed pings
   * within 8.5 s (reverse-links.ts), so rule 55 holds with any interval. Every agent links to
   * every replica, and a replica reaches an agent only over that link.
   */
  isOnline(m: Pick<Machine, "lastSeenAt"> & { name?: string }): boolean {
    const age = this.now().getTime() - m.lastSeenAt.getTime();
    if (age <= this.baseHeartbeatIntervalMs * MISSED_HEARTBEATS_OFFLINE) return true;
    if (age > this.judgedIntervalMs * MISSED_HEARTBEATS_OFFLINE) return false;
    return m.name !== undefined && this.linkAlive?.(m.name) === true;
  }
}

/**
 * One statement for the whole report, which writes only the seats that changed (a seat report
 * repeats every seat; issue 36): a registration is four statements whatever its seat count,
 * where one upsert per seat held a pool connection per round trip (with ~300 heartbeat statements
 * a second, the likely cause of JOURNAL_NO_ANSWER at ~600 agents registering at once).
 */
async function replaceSeats(db: Db, machine: string, wire: Seat[]): Promise<void> {
  const rows = wire.map((s) => seatRowFromWire(machine, s));
  if (rows.length) {
    const changed = [
      "machine",
      "name",
      "kind",
      "status",
      "occupant_id",
      "title",
      "input_capabilities",
      // A seat whose harness comes to say it cannot work (or recovers) after its first report (issue 35).
      "cannot_work",
      "present",
    ] as const;
    await db
      .insert(seats)
      .values(rows)
      .onConflictDoUpdate({
        target: seats.id,
        set: Object.fromEntries([...changed, "updated_at"].map((c) => [camel(c), sql.raw(`excluded.${c}`)])),
        setWhere: sql.raw(
          `(${changed.map((c) => `seats.${c}`).join(", ")}) IS DISTINCT FROM (${changed.map((c) => `excluded.${c}`).join(", ")})`,
        ),
      });
  }
  const keep = rows.map((r) => r.id);
  await db
    .update(seats)
    .set({ present: false })
    .where(
      keep.length
        ? and(eq(seats.machine, machine), eq(seats.present, true), notInArray(seats.id, keep))
        : and(eq(seats.machine, machine), eq(seats.present, true)),
    );
}

/** `name` is one of `names`, sent as a single JSON parameter. */
const named = (names: string[]) =>
  sql`${machines.name} in (select jsonb_array_elements_text(${JSON.stringify(names)}::jsonb))`;

const camel = (c: string) => c.replace(/_(.)/g, (_, x: string) => x.toUpperCase());
