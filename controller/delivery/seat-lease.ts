/**
 * One delivery per seat at a time across every controller on the journal (ADR 0207,
 * VUH-2779): a lease row per seat. The hot path takes it inside the admission statement
 * (journal/admission.ts) and gives it back, or hands it on, inside the settle statement
 * (journal/outcome.ts). These are the prepared statements for the other cases: a seat that
 * was busy at admission, a notice, a stop, and a lease given back without a settle. No
 * connection is held while waiting; a lease whose holder died expires and is taken over,
 * and recovery frees a dead controller's leases at once (journal/instances.ts).
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { p, statement } from "../journal/statements.js";

const POLL_MS = 25;

// A holder names one delivery (or notice, or stop) of one controller, so a lease already in
// its name is its own: a settle its controller gave up on (no answer within the deadline,
// ADR 0033) can still commit later and hand the lease to the next waiter, which then polls
// for it as for a free seat. It takes it at once; it waited out the 25 s before.
const takeStatement = statement<Record<string, unknown>>("take_turn", () => sql`
insert into seat_turns (seat_id, holder, expires_at) values (${p("seatId")}::text, ${p("holder")}::text, now() + make_interval(secs => ${p("leaseSeconds")}::float8))
on conflict (seat_id) do update set holder = excluded.holder, expires_at = excluded.expires_at where seat_turns.expires_at < now() or seat_turns.holder = excluded.holder
returning holder
`);

const releaseStatement = statement<Record<string, unknown>>("release_turn", () => sql`
delete from seat_turns where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text
`);

const handStatement = statement<Record<string, unknown>>("hand_turn", () => sql`
update seat_turns set holder = ${p("next")}::text, expires_at = now() + make_interval(secs => ${p("leaseSeconds")}::float8)
where seat_id = ${p("seatId")}::text and holder = ${p("holder")}::text returning holder
`);

/** One try: true when `holder` now has the seat's lease. */
export async function tryTakeLease(db: Db, seatId: string, holder: string, leaseMs: number): Promise<boolean> {
  const rows = await takeStatement(db).run({ seatId, holder, leaseSeconds: leaseMs / 1000 });
  return rows[0]?.holder === holder;
}

/** Polls for the lease until `deadline` (a `performance.now()` time); false when it stayed held. */
export async function pollLease(db: Db, seatId: string, holder: string, leaseMs: number, deadline: number, signal?: AbortSignal): Promise<boolean> {
  for (;;) {
    if (await tryTakeLease(db, seatId, holder, leaseMs)) return true;
    if (performance.now() >= deadline || signal?.aborted) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

export async function releaseLease(db: Db, seatId: string, holder: string): Promise<void> {
  await releaseStatement(db).run({ seatId, holder });
}

const RELEASE_RETRY_MS = 250;

/**
 * Releases a lease whose release failed (the journal was away), retrying until it commits or
 * until the lease has expired by itself. Without it the seat stayed taken for the whole lease
 * after the database came back, though its delivery was over (verify: calls stuck 11-16 s
 * behind such leases at each database restart). Deletes only a lease still in `holder`'s name.
 */
export function releaseLeaseWhenBack(db: Db, seatId: string, holder: string, leaseMs: number, onGiveUp: (e: Error) => void): void {
  const until = performance.now() + leaseMs;
  const attempt = () => {
    releaseLease(db, seatId, holder).catch((e: Error) => {
      if (performance.now() + RELEASE_RETRY_MS >= until) return onGiveUp(e);
      setTimeout(attempt, RELEASE_RETRY_MS).unref();
    });
  };
  setTimeout(attempt, RELEASE_RETRY_MS).unref();
}

/** Moves a lease this process holds to another of its deliveries; false when it was not held. */
export async function handLease(db: Db, seatId: string, holder: string, next: string, leaseMs: number): Promise<boolean> {
  const rows = await handStatement(db).run({ seatId, holder, next, leaseSeconds: leaseMs / 1000 });
  return rows.length === 1;
}

export interface SeatLease {
  release(): Promise<void>;
}

/** Takes the seat's lease, or returns undefined when it stayed held for `waitMs` (tests and tools). */
export async function takeSeatLease(db: Db, seatId: string, holder: string, leaseMs: number, waitMs: number): Promise<SeatLease | undefined> {
  if (!(await pollLease(db, seatId, holder, leaseMs, performance.now() + waitMs))) return undefined;
  let released = false;
  return {
    release: async () => {
      if (released) return;
      await releaseLease(db, seatId, holder);
      released = true;
    },
  };
}
