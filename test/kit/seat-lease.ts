/**
 * A seat's lease as a test's stand-in for another controller (or a settle that commits late) takes, hands
 * and releases it: straight on seat_turns, with no line and no instance fence. The controller itself never
 * writes a lease this way; its statements (controller/delivery/turn.ts, turn-join.ts) keep the line and the
 * fence. The take is the controller's own (`takeLeaseSql`): free, expired, or the holder's already.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../../controller/db/open.js";
import { releaseLease as releaseTurnLease, takeLeaseSql } from "../../controller/delivery/turn-statements.js";

const rowsOf = (r: unknown) => (Array.isArray(r) ? r : (r as { rows: unknown[] }).rows) as { holder: string }[];

/** One try: true when `holder` now has the seat's lease. */
export async function tryTakeLease(db: Db, seatId: string, holder: string, leaseMs: number): Promise<boolean> {
  const expiry = sql`now() + make_interval(secs => ${leaseMs / 1000}::float8)`;
  const r = await db.execute(takeLeaseSql(sql`select ${seatId}::text, ${holder}::text, ${expiry}`));
  return rowsOf(r)[0]?.holder === holder;
}

/** Moves a lease `holder` has to `next`, as a settle that commits late does; false when it was not held. */
export async function handLease(db: Db, seatId: string, holder: string, next: string, leaseMs: number) {
  const r =
    await db.execute(sql`update seat_turns set holder = ${next}, expires_at = now() + make_interval(secs => ${leaseMs / 1000}::float8)
    where seat_id = ${seatId} and holder = ${holder} returning holder`);
  return rowsOf(r).length === 1;
}

/** The other controller settles with nobody in line: its lease is deleted (the controller's release, unfenced). */
export function releaseLease(db: Db, seatId: string, holder: string): Promise<void> {
  return releaseTurnLease({ db, leaseMs: 0 }, seatId, holder);
}

/** Takes the seat's lease, trying every 25 ms until `waitMs` pass; undefined when it stayed held. */
export async function takeSeatLease(db: Db, seatId: string, holder: string, leaseMs: number, waitMs: number) {
  const deadline = performance.now() + waitMs;
  while (!(await tryTakeLease(db, seatId, holder, leaseMs))) {
    if (performance.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, 25));
  }
  return { release: () => releaseLease(db, seatId, holder) };
}
