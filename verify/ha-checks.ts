/**
 * The HA run's two extra checks, read from the journal after healing (issue 34 goals):
 * - seat_overlaps: two deliveries in flight to one seat at once: a message arriving in the seat (the
 *   agent's mailbox records the time) before the previous one's receipt was settled (the audit below).
 * - paused_writes: a state change by a paused replica, after it was continued, of a receipt admitted
 *   before it was stopped (its stale work: fencing must refuse it). Updates that keep the state
 *   (retention dropping old result bodies) are not its stale work. Each replica connects as its own
 *   PostgreSQL role (ha-cluster.ts) and a trigger (installWriteAudit) logs every insert and update of
 *   delivery_receipts and operator_call_receipts with the role and the database's clock.
 * Every change of a seat's turn and line (seat_turns, seat_waiters) is logged apart (verify_turns), so an
 * overlap's example carries the seat's hand-offs before it.
 */
import type postgres from "postgres";

export async function installWriteAudit(db: postgres.Sql): Promise<void> {
  await db.unsafe(`
    create table if not exists verify_writes (at timestamptz not null default clock_timestamp(), tbl text not null, op text not null, id text not null, old_state text, state text, who text not null default session_user, created_at timestamptz);
    create or replace function verify_log_write() returns trigger language plpgsql as $$
    begin
      insert into verify_writes (tbl, op, id, old_state, state, created_at) values (TG_TABLE_NAME, TG_OP, NEW.id, case when TG_OP = 'UPDATE' then OLD.state end, NEW.state, NEW.created_at);
      return NEW;
    end $$;
    drop trigger if exists verify_log_write on delivery_receipts;
    create trigger verify_log_write after insert or update on delivery_receipts for each row execute function verify_log_write();
    drop trigger if exists verify_log_write on operator_call_receipts;
    create trigger verify_log_write after insert or update on operator_call_receipts for each row execute function verify_log_write();
    create or replace function verify_log_turn() returns trigger language plpgsql as $$
    begin
      if TG_OP = 'DELETE' or OLD.holder is distinct from NEW.holder then
        insert into verify_writes (tbl, op, id, old_state, state) values (TG_TABLE_NAME, TG_OP, split_part(OLD.holder, ':', 2), 'turn', 'turn_left');
      end if;
      return null;
    end $$;
    drop trigger if exists verify_log_turn on seat_turns;
    create trigger verify_log_turn after delete or update on seat_turns for each row execute function verify_log_turn();
    create table if not exists verify_turns (at timestamptz not null default clock_timestamp(), tbl text not null, op text not null, seat_id text not null, old_holder text, holder text, expires_at timestamptz, who text not null default session_user);
    create or replace function verify_log_line() returns trigger language plpgsql as $$
    begin
      if TG_OP = 'DELETE' then
        insert into verify_turns (tbl, op, seat_id, old_holder) values (TG_TABLE_NAME, TG_OP, OLD.seat_id, OLD.holder);
      else
        insert into verify_turns (tbl, op, seat_id, old_holder, holder, expires_at) values (TG_TABLE_NAME, TG_OP, NEW.seat_id, case when TG_OP = 'UPDATE' then OLD.holder end, NEW.holder, (to_jsonb(NEW)->>'expires_at')::timestamptz);
      end if;
      return null;
    end $$;
    do $$ declare t text; begin
      foreach t in array array['seat_turns', 'seat_waiters'] loop
        if to_regclass(t) is not null then
          execute format('drop trigger if exists verify_log_line on %I', t);
          execute format('create trigger verify_log_line after insert or delete or update on %I for each row execute function verify_log_line()', t);
        end if;
      end loop;
    end $$;
  `);
}

export interface PauseWindow {
  /** The replica's role, replica<N>. */
  role: string;
  pausedAt: Date;
  resumedAt: Date;
}

/** Writes after resume count within this long of it: later ones are the replica's new work (reconciles, new calls on rows it may now own). */
const STALE_WINDOW_MS = 30_000;

export async function pausedWrites(
  db: postgres.Sql,
  windows: PauseWindow[],
): Promise<{ count: number; examples: unknown[] }> {
  let count = 0;
  const examples: unknown[] = [];
  for (const w of windows) {
    const until = new Date(w.resumedAt.getTime() + STALE_WINDOW_MS);
    const rows = await db<
      { tbl: string; op: string; id: string; state: string | null; at: Date; created_at: Date | null }[]
    >`
      select tbl, op, id, state, at, created_at from verify_writes
      where who = ${w.role} and at >= ${w.resumedAt} and at < ${until} and op = 'UPDATE' and old_state is distinct from state and created_at < ${w.pausedAt}`;
    count += rows.length;
    for (const r of rows.slice(0, 5 - examples.length)) examples.push({ role: w.role, ...r, resumedAt: w.resumedAt });
  }
  return { count, examples };
}

export interface OverlapResult {
  seat_overlaps: number;
  /** The most deliveries in flight to one seat at one moment (1 when turns held). */
  max_in_flight_per_seat: number;
  dispatched_unsettled: number;
  examples: unknown[];
}

/** A message as its seat recorded it (the agent's mailbox): when it arrived. */
export interface Arrival {
  seat: string;
  deliveryId: string;
  atMs: number;
}

/**
 * A delivery is in flight at least from its arrival in the seat to its receipt's settle (the first audited
 * write that moved it out of `dispatching`), or to the moment its seat turn left it, whichever is first.
 * The seat's turn is handed on at the settle, so a second arrival at the seat before the first's settle is
 * two deliveries in flight at once. The one exception is ADR 0043's early takeover of a killed replica's
 * turn: it moves the turn only once the seat's agent has fenced the replica's epoch and attested that no
 * Deliver of it is in flight to that seat, while the receipt stays in flight until recovery marks it
 * uncertain at the replica's lease expiry; there the delivery's flight ended with the turn.
 */
export async function seatOverlaps(db: postgres.Sql, arrivals: Arrival[]): Promise<OverlapResult> {
  const settled = new Map<string, number>();
  for (const r of await db<
    { id: string; at: Date }[]
  >`select id, min(at) as at from verify_writes where (tbl = 'delivery_receipts' and state <> 'dispatching') or tbl = 'seat_turns' group by id`)
    settled.set(r.id, new Date(r.at).getTime());
  const bySeat = new Map<string, Arrival[]>();
  for (const a of arrivals) bySeat.set(a.seat, [...(bySeat.get(a.seat) ?? []), a]);
  let overlaps = 0;
  let unsettled = 0;
  let maxInFlight = arrivals.length ? 1 : 0;
  const examples: unknown[] = [];
  for (const [seat, list] of bySeat) {
    let open: { id: string; end: number }[] = [];
    for (const a of list.sort((x, y) => x.atMs - y.atMs)) {
      open = open.filter((o) => o.end > a.atMs);
      if (open.length > 0) {
        overlaps++;
        if (examples.length < 5)
          examples.push({ seat, id: a.deliveryId, arrivedAt: new Date(a.atMs), inFlight: open.map((o) => o.id) });
      }
      const end = settled.get(a.deliveryId);
      // Never settled (left dispatching or uncertain): its end is unknown, counted apart, not an overlap forever.
      if (end === undefined) unsettled++;
      open.push({ id: a.deliveryId, end: end ?? a.atMs });
      maxInFlight = Math.max(maxInFlight, open.length);
    }
  }
  // What the journal recorded of each example's deliveries (states, turn moves, which replica's role, when): a
  // run's cluster is gone when it ends, and an overlap is not explained without these rows.
  // And the seat's line and turn in the 30 s before the arrival: who held it, who waited, who moved it.
  for (const e of examples as {
    seat: string;
    id: string;
    arrivedAt: Date;
    inFlight: string[];
    writes?: readonly unknown[];
    line?: readonly unknown[];
  }[]) {
    e.writes =
      await db`select at, tbl, op, id, old_state, state, who from verify_writes where id in ${db([e.id, ...e.inFlight])} order by at`;
    const from = new Date(e.arrivedAt.getTime() - 30_000);
    e.line =
      await db`select at, tbl, op, old_holder, holder, expires_at, who from verify_turns where seat_id = ${e.seat} and at between ${from} and ${e.arrivedAt} order by at`;
  }
  return { seat_overlaps: overlaps, max_in_flight_per_seat: maxInFlight, dispatched_unsettled: unsettled, examples };
}
