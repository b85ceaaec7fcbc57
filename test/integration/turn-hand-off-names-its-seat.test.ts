/**
 * Issue 34 item 4 (ADR 0039): a seat's lease handed to another replica's waiter notifies that replica with
 * the seat's id, and only that seat's poll looks. Before, the notification named no seat and the receiving
 * replica woke the poll of every seat it had waiters on: a replica with waiters on K seats ran K poll
 * statements per hand-off to it. A notification that names no seat (a replica from before, in a rolling
 * upgrade) still wakes every one. The polls are counted by wrapping the real poll statement.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { DRIVERS, openTestDatabase } from "../kit/test-db.js";
import type { Database } from "../../controller/db/open.js";
import { SeatTurns } from "../../controller/delivery/turn.js";
import type { SeatTurn } from "../../controller/delivery/receipt-types.js";
import type { HandOffs } from "../../controller/delivery/turn-hand-offs.js";
import { joinSeatTurn } from "../../controller/delivery/turn-join.js";

const polls = vi.hoisted(() => [] as { seatId: string; instance: string }[]);
vi.mock("../../controller/delivery/turn-statements.js", async (real) => {
  const m = await real<typeof import("../../controller/delivery/turn-statements.js")>();
  return {
    ...m,
    pollTurn: (...args: Parameters<typeof m.pollTurn>) => {
      polls.push({ seatId: args[1], instance: args[2] });
      return m.pollTurn(...args);
    },
  };
});

/** Seats on which replica rb has its own holder in the turn and a second waiter: their polls rest as watchers. */
const otherSeats = (round: number) => Array.from({ length: 8 }, (_, i) => `w${round}/${i}`);
const LONG_WAIT_MS = 20_000;

describe.each(DRIVERS)("a heard hand-off wakes the seat it names (%s)", (driver) => {
  let database: Database;
  let cleanup: () => Promise<void>;
  let ra: SeatTurns;
  let rb: SeatTurns;
  const join = (turns: SeatTurns, seatId: string, holder: string) =>
    joinSeatTurn(turns, { seatId, holder, waitMs: LONG_WAIT_MS });
  const rbPollsOf = (seats: string[]) => polls.filter((p) => p.instance === "rb" && seats.includes(p.seatId)).length;
  const holding: SeatTurn[] = [];
  const next: Promise<SeatTurn>[] = [];

  beforeAll(async () => {
    ({ database, cleanup } = await openTestDatabase(driver));
    await database.db.execute(
      sql`insert into controller_instances (id, pid, host, lease_expires_at) select id, 1, 'test', now() + interval '1 hour' from unnest(array['ra', 'rb']) id`,
    );
    ra = new SeatTurns(database.db, 30_000, "ra");
    rb = new SeatTurns(database.db, 30_000, "rb");
    // The test means nothing unless rb hears hand-offs: without them every poll runs on its timer.
    const ear = (rb as unknown as { handOffs: HandOffs }).handOffs;
    while (!ear.hearing) await new Promise((r) => setTimeout(r, 5));
  });
  afterAll(async () => {
    // Each holder hands its seat on to rb's next waiter, in process; then those give it back.
    for (const t of holding) await rb?.leave(t);
    for (const t of await Promise.all(next)) await rb.leave(t);
    await database?.close();
    await cleanup?.();
  });

  /** rb holds every other seat and waits behind itself on each: its polls there rest WATCH_MS (1 s) from now. */
  async function watchOtherSeats(seats: string[]): Promise<void> {
    for (const seat of seats) {
      const held = await join(rb, seat, `rb:hold-${seat}`);
      expect(held.held).toBe(true);
      holding.push(held);
      next.push(join(rb, seat, `rb:next-${seat}`));
    }
    while (seats.some((s) => rb.waiting(s) === 0)) await new Promise((r) => setTimeout(r, 1));
  }

  it("a lease ra hands to rb's waiter on one seat runs rb's poll of that seat, and no poll of the 8 others it waits on", async () => {
    const others = otherSeats(1);
    await watchOtherSeats(others);
    const first = await join(ra, "h/1", "ra:1");
    expect(first.held).toBe(true);
    const waiter = join(rb, "h/1", "rb:h1");
    while (rb.waiting("h/1") === 0) await new Promise((r) => setTimeout(r, 1));
    const before = rbPollsOf(others);
    await ra.leave(first); // pass_turn hands the lease to rb:h1 and notifies rb with "h/1".
    const turn = await waiter;
    expect(turn.held).toBe(true);
    expect(rbPollsOf(others) - before).toBe(0);
    await rb.leave(turn);
  });

  it("a notification that names no seat, as a replica from before sends it, wakes rb's poll of every seat it waits on", async () => {
    const others = otherSeats(2);
    await watchOtherSeats(others);
    const before = rbPollsOf(others);
    await database.db.execute(sql`select pg_notify('clankie_turn_rb', '')`);
    for (let t = Date.now(); rbPollsOf(others) - before < others.length && Date.now() - t < 500; )
      await new Promise((r) => setTimeout(r, 2));
    expect(rbPollsOf(others) - before).toBe(others.length);
  });
});
