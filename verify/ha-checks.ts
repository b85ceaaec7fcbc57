/**
 * The HA run's two extra checks, read from the journal after healing (issue 34 goals):
 * - seat_overlaps: two deliveries in flight to one seat at once. Each receipt's flight is
 *   [dispatched_at, settled_at]; per seat, sorted by dispatch, a flight that starts before the
 *   previous ones have all settled is an overlap (the seat's turn was broken).
 * - paused_writes: a write by a paused replica, after it was continued, to a receipt admitted before
 *   it was stopped (its stale work: fencing must refuse it). Each replica connects as its own
 *   PostgreSQL role (ha-cluster.ts) and a trigger (installWriteAudit) logs every insert and update of
 *   delivery_receipts and operator_call_receipts with the role and the database's clock.
 */
import type postgres from "postgres";

export async function installWriteAudit(db: postgres.Sql): Promise<void> {
  await db.unsafe(`
    create table if not exists verify_writes (at timestamptz not null default clock_timestamp(), tbl text not null, op text not null, id text not null, state text, who text not null default session_user, created_at timestamptz);
    create or replace function verify_log_write() returns trigger language plpgsql as $$
    begin
      insert into verify_writes (tbl, op, id, state, created_at) values (TG_TABLE_NAME, TG_OP, NEW.id, NEW.state, NEW.created_at);
      return NEW;
    end $$;
    drop trigger if exists verify_log_write on delivery_receipts;
    create trigger verify_log_write after insert or update on delivery_receipts for each row execute function verify_log_write();
    drop trigger if exists verify_log_write on operator_call_receipts;
    create trigger verify_log_write after insert or update on operator_call_receipts for each row execute function verify_log_write();
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

export async function pausedWrites(db: postgres.Sql, windows: PauseWindow[]): Promise<{ count: number; examples: unknown[] }> {
  let count = 0;
  const examples: unknown[] = [];
  for (const w of windows) {
    const until = new Date(w.resumedAt.getTime() + STALE_WINDOW_MS);
    const rows = await db<{ tbl: string; op: string; id: string; state: string | null; at: Date; created_at: Date | null }[]>`
      select tbl, op, id, state, at, created_at from verify_writes
      where who = ${w.role} and at >= ${w.resumedAt} and at < ${until} and op = 'UPDATE' and created_at < ${w.pausedAt}`;
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

export async function seatOverlaps(db: postgres.Sql, since?: Date): Promise<OverlapResult> {
  const rows = await db<{ id: string; seat_id: string; dispatched_at: Date; settled_at: Date | null; state: string }[]>`
    select id, seat_id, dispatched_at, settled_at, state from delivery_receipts
    where dispatched_at is not null ${since ? db`and dispatched_at >= ${since}` : db``}
    order by seat_id, dispatched_at`;
  let overlaps = 0;
  let unsettled = 0;
  let maxInFlight = rows.length ? 1 : 0;
  const examples: unknown[] = [];
  let seat = "";
  let open: { id: string; end: number }[] = [];
  for (const r of rows) {
    if (r.seat_id !== seat) {
      seat = r.seat_id;
      open = [];
    }
    const start = r.dispatched_at.getTime();
    open = open.filter((o) => o.end > start);
    if (open.length > 0) {
      overlaps++;
      if (examples.length < 5) examples.push({ seat, id: r.id, state: r.state, dispatchedAt: r.dispatched_at, inFlight: open.map((o) => o.id) });
    }
    // A receipt never settled (left uncertain) has no known end: counted apart, not as an overlap forever.
    if (!r.settled_at) unsettled++;
    open.push({ id: r.id, end: r.settled_at ? r.settled_at.getTime() : start });
    maxInFlight = Math.max(maxInFlight, open.length);
  }
  return { seat_overlaps: overlaps, max_in_flight_per_seat: maxInFlight, dispatched_unsettled: unsettled, examples };
}
