/**
 * Early takeover of a vanished replica's seat turns, fenced at the resource (ADR 0043). A replica
 * whose waiters find a seat's turn held (or its line headed) by another instance whose lease renewal
 * is overdue (the seat-turn poll names it: `suspectSql`) asks the seat's agent to fence that
 * instance's epoch. The agent agrees only while that instance has no live link to it (kill -9 closes
 * a process's sockets at once), says which of its seats a Deliver of the epoch is still in flight to,
 * and from then on refuses every Deliver carrying the epoch. Only then are the instance's leases and places in line on that agent's other seats given
 * up, in one statement fenced by this replica's own lease, and only while the instance has not taken
 * a newer epoch (which the agent has not fenced). Its receipts stay as they are: in flight until its
 * lease expires and recovery marks them uncertain (never replayed); only the seats' turns move on.
 */
import { create } from "@bufbuild/protobuf";
import { type SQL, sql } from "drizzle-orm";
import { FenceControllerEpochRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import type { Logger } from "../../shared/logger.js";
import type { Db } from "../db/open.js";
import { leaseHeld, type InstanceEpoch } from "../journal/lease-guard.js";
import { p } from "../journal/statements.js";
import type { AgentClients } from "../nodes/agent-clients.js";

/** How far past its renewal interval a peer's lease renewal must be before its seats' agents are asked. */
export const TAKEOVER_SUSPECT_AFTER_MS = 1_000;
/** One question per (suspect, agent) at most this often: a live replica's agent keeps saying no. */
const ASK_EVERY_MS = 1_000;
const FENCE_TIMEOUT_MS = 2_000;

/** An instance whose lease renewal is overdue and that holds a seat's turn or waits for it. */
export interface TurnSuspect {
  instance: string;
  epoch: number;
}

/**
 * The seat-turn poll's column (turn.ts) naming a suspect as "id epoch": an instance other than `self` that
 * holds `seatId`'s lease or waits in its line while its lease renewal is overdue by `staleSeconds` (null:
 * ask nobody). Overdue is only a reason to ask the seat's agent; its fence is what makes taking over safe.
 */
export function suspectSql(): SQL {
  return sql`select i.id || ' ' || i.epoch from controller_instances i
  where ${p("staleSeconds")}::float8 is not null and i.id <> ${p("self")}::text and i.heartbeat_at < now() - make_interval(secs => ${p("staleSeconds")}::float8)
    and (exists (select 1 from seat_turns st where st.seat_id = ${p("seatId")}::text and split_part(st.holder, ':', 1) = i.id)
      or exists (select 1 from seat_waiters w where w.seat_id = ${p("seatId")}::text and split_part(w.holder, ':', 1) = i.id and w.expires_at > now()))
  order by i.id limit 1`;
}

const rowsOf = <T>(r: unknown): T[] => (Array.isArray(r) ? r : (r as { rows: T[] }).rows) as T[];

/**
 * Gives up `instance`'s seat leases and places in line on `machine`'s seats, except the seats a Deliver
 * of the fenced epoch is still in flight to. Returns how many leases were freed and rows left the line.
 */
export async function takeOverTurns(
  db: Db,
  t: { machine: string; instance: string; epoch: number; inFlightSeats: string[]; writer: InstanceEpoch },
): Promise<{ freed: string[]; unlined: number }> {
  const rows = rowsOf<{ freed: string[] | string | null; unlined: number | string }>(
    await db.execute(sql`
with allowed as (
  select 1 where ${leaseHeld(t.writer)}
    and not exists (select 1 from controller_instances i where i.id = ${t.instance} and i.epoch > ${t.epoch}::bigint)
),
freed as (
  delete from seat_turns st using seats s
  where s.id = st.seat_id and s.machine = ${t.machine} and split_part(st.holder, ':', 1) = ${t.instance}
    and s.name not in (select jsonb_array_elements_text(${JSON.stringify(t.inFlightSeats)}::jsonb))
    and exists (select 1 from allowed)
  returning st.seat_id
),
unlined as (
  delete from seat_waiters w using seats s
  where s.id = w.seat_id and s.machine = ${t.machine} and split_part(w.holder, ':', 1) = ${t.instance}
    and exists (select 1 from allowed)
  returning w.holder
)
select (select coalesce(jsonb_agg(seat_id), '[]'::jsonb)::text from freed) as freed, (select count(*) from unlined)::int as unlined
`),
  );
  const r = rows[0];
  const freed = typeof r?.freed === "string" ? (JSON.parse(r.freed) as string[]) : (r?.freed ?? []);
  return { freed, unlined: Number(r?.unlined ?? 0) };
}

export interface TurnTakeoverOptions {
  db: Db;
  agents: AgentClients;
  /** This replica's own lease: the takeover is one of its writes (ADR 0036). */
  fence: () => InstanceEpoch;
  logger: Logger;
  /** A seat's turn came free: the local waiters look again now. */
  onTaken: () => void;
}

export class TurnTakeover {
  private readonly asked = new Map<string, number>();

  constructor(private readonly o: TurnTakeoverOptions) {}

  /** `suspect` holds `seatId`'s turn or waits for it, with its lease renewal overdue. */
  suspect(seatId: string, suspect: TurnSuspect): void {
    this.run(seatId, suspect).catch((e: Error) =>
      this.o.logger.warn("early takeover of a seat turn failed", {
        seatId,
        instance: suspect.instance,
        error: e.message,
      }),
    );
  }

  private async run(seatId: string, s: TurnSuspect): Promise<void> {
    const { db, logger } = this.o;
    const [machine] = rowsOf<{ name: string; endpoint: string; agent_token: string }>(
      await db.execute(
        sql`select m.name, m.endpoint, m.agent_token from seats s join machines m on m.name = s.machine where s.id = ${seatId}`,
      ),
    );
    if (!machine) return;
    const key = `${s.instance} ${s.epoch} ${machine.name}`;
    const now = performance.now();
    if (now - (this.asked.get(key) ?? -Infinity) < ASK_EVERY_MS) return;
    this.asked.set(key, now);
    for (const [k, at] of this.asked) if (now - at > 60_000) this.asked.delete(k);

    const conn = this.o.agents.get(machine.name, machine.endpoint, machine.agent_token);
    if (!(await conn.connect())) return;
    const answer = await conn.client.fenceControllerEpoch(
      create(FenceControllerEpochRequestSchema, { controllerInstance: s.instance, controllerEpoch: BigInt(s.epoch) }),
      { timeoutMs: FENCE_TIMEOUT_MS },
    );
    if (!answer.fenced) return;
    const taken = await takeOverTurns(db, {
      machine: machine.name,
      instance: s.instance,
      epoch: s.epoch,
      inFlightSeats: answer.inFlightSeats,
      writer: this.o.fence(),
    });
    if (taken.freed.length || taken.unlined) {
      logger.warn("took over the seat turns of a replica the agent fenced (no live link, lease renewal overdue)", {
        instance: s.instance,
        epoch: s.epoch,
        machine: machine.name,
        freed: taken.freed,
        unlined: taken.unlined,
        stillInFlight: answer.inFlightSeats,
      });
      this.o.onTaken();
    }
  }
}
