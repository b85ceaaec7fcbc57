/**
 * Seat turns (rule 25) on each driver: one delivery per seat at a time, served in the order
 * they entered, the lease handed from one to the next; the wait is bounded and after it the
 * message goes on without the turn; other seats never wait. A lease already handed to a waiter
 * by a settle its controller gave up on (the database answered after the deadline) is that
 * waiter's at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { DRIVERS, openTestDatabase } from "../kit/test-db.js";
import type { Database } from "../../controller/db/open.js";
import { SEAT_TURN_WAIT_MS } from "../../controller/delivery/pipeline.js";
import { SeatTurns, withSeatTurn } from "../../controller/delivery/turn.js";
import { TURN_CLAIM_MS } from "../../controller/delivery/turn-statements.js";
import { joinSeatTurn } from "../../controller/delivery/turn-join.js";
import { handLease, releaseLease, tryTakeLease } from "../kit/seat-lease.js";

/** A notice's or a stop's way into the seat's turn: it joins the line in its own statement (turn-join.ts). */
const join = (turns: SeatTurns, seatId: string, holder: string, waitMs = SEAT_TURN_WAIT_MS) =>
  joinSeatTurn(turns, { seatId, holder, waitMs });

describe.each(DRIVERS)("seat turns on %s", (driver) => {
  let database: Database;
  let cleanup: () => Promise<void>;
  const holderOf = async (seat: string) => {
    const r: unknown = await database.db.execute(sql`select holder from seat_turns where seat_id = ${seat}`);
    const rows = (Array.isArray(r) ? r : (r as { rows: unknown[] }).rows) as { holder: string }[];
    return rows[0]?.holder;
  };
  beforeAll(async () => {
    ({ database, cleanup } = await openTestDatabase(driver));
    // The line counts a waiter only while its controller's instance lease is live (ADR 0039, ADR 0036).
    await database.db.execute(
      sql`insert into controller_instances (id, pid, host, lease_expires_at) select id, 1, 'test', now() + interval '1 hour' from unnest(array['me', 'other', 'ra', 'rb']) id`,
    );
  });
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  it("twenty waiters are served one at a time in the order they entered, each holding the lease in its turn", async () => {
    const turns = new SeatTurns(database.db, 30_000, "me");
    const order: number[] = [];
    let inTurn = 0;
    const all: Promise<void>[] = [];
    let joined!: () => void;
    const allJoined = new Promise<void>((r) => (joined = r));
    for (let i = 0; i < 20; i++) {
      all.push(
        withSeatTurn(turns, join(turns, "m/fifo", `me:${i}`), async (turn) => {
          inTurn++;
          expect(inTurn).toBe(1);
          expect(turn.held).toBe(true);
          expect(await holderOf("m/fifo")).toBe(`me:${i}`);
          // The first keeps the seat until every other one is in the line.
          await (i === 0 ? allJoined : new Promise((r) => setTimeout(r, 2)));
          order.push(i);
          inTurn--;
        }),
      );
      // Each joins the line once the one before it is in it (its join statement answered).
      while (i > 0 && turns.waiting("m/fifo") < i) await new Promise((r) => setTimeout(r, 1));
    }
    joined();
    await Promise.all(all);
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(await holderOf("m/fifo")).toBeUndefined();
  });

  it("the wait is bounded: after it the message goes on without the turn, and the holder keeps it", async () => {
    const turns = new SeatTurns(database.db, 30_000, "me");
    const first = await join(turns, "m/slow", "me:first", 10_000);
    expect(first.held).toBe(true);
    const late = await join(turns, "m/slow", "me:late", 60);
    expect(late.held).toBe(false);
    expect(await holderOf("m/slow")).toBe("me:first");
    await turns.leave(late);
    expect(await holderOf("m/slow")).toBe("me:first");
    await turns.leave(first);
    expect(await holderOf("m/slow")).toBeUndefined();
  });

  it("a lease another controller holds is waited for, then taken once it is given back; other seats never wait", async () => {
    expect(await tryTakeLease(database.db, "m/remote", "other:1", 60_000)).toBe(true);
    const turns = new SeatTurns(database.db, 30_000, "me");
    const other = await join(turns, "m/free", "me:b", 1000);
    expect(other.held).toBe(true);
    const waiting = join(turns, "m/remote", "me:a", 20_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(await holderOf("m/remote")).toBe("other:1");
    // The other controller settles: its lease is deleted, and the waiter takes it.
    await releaseLease(database.db, "m/remote", "other:1");
    const t = await waiting;
    expect(t.held).toBe(true);
    expect(await holderOf("m/remote")).toBe("me:a");
    await turns.leave(t);
    await turns.leave(other);
  });

  it("a settle that commits after its deadline handed the lease to the next waiter: that waiter takes its turn at once, not after the 25 s wait", async () => {
    const turns = new SeatTurns(database.db, 60_000, "me");
    const first = await join(turns, "m/late", "me:first", 1_000);
    expect(first.held).toBe(true);
    const next = join(turns, "m/late", "me:next", 3_000);
    await new Promise((r) => setTimeout(r, 50));
    // The first delivery's settle statement, given up on by its controller, commits when the
    // database answers again: it hands the lease to the head waiter, as a settle does.
    expect(await handLease(database.db, "m/late", "me:first", "me:next", 60_000)).toBe(true);
    // The controller then gives the turn back as for a failed settle: its own hand finds the
    // lease no longer in the first holder's name, and the head waiter polls for it.
    const t0 = performance.now();
    await turns.leave(first);
    const t = await next;
    expect(t.held).toBe(true);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(await holderOf("m/late")).toBe("me:next");
    // Taking a lease one already holds renews it and is idempotent.
    expect(await tryTakeLease(database.db, "m/late", "me:next", 60_000)).toBe(true);
    expect(await tryTakeLease(database.db, "m/late", "me:other", 60_000)).toBe(false);
    await turns.leave(t);
    expect(await holderOf("m/late")).toBeUndefined();
  });

  it("issue 34 goal 2: a turn the fleet took from this controller's holder and handed to its waiter is claimed within the claim window, and the old holder's late settle does not pass it on", async () => {
    const turns = new SeatTurns(database.db, 60_000, "me");
    const first = await join(turns, "m/taken", "me:first", 1_000);
    expect(first.held).toBe(true);
    const next = join(turns, "m/taken", "me:next", 20_000);
    while (turns.waiting("m/taken") < 1) await new Promise((r) => setTimeout(r, 5));
    // A peer takes the first holder's turn over (its replica paused past its lease: ADR 0036, 0043) and a
    // peer's poll hands the freed lease to the head of the line, here, with the claim window. No
    // notification: the watch alone must find it. The first holder is still in its turn in this process.
    await releaseLease(database.db, "m/taken", "me:first");
    await database.db.execute(sql`delete from seat_waiters where holder = 'me:next'`);
    expect(await tryTakeLease(database.db, "m/taken", "me:next", TURN_CLAIM_MS)).toBe(true);
    const t0 = performance.now();
    const t = await next;
    expect(t.held).toBe(true);
    expect(performance.now() - t0).toBeLessThan(TURN_CLAIM_MS);
    // Claimed for a whole lease (60 s), not the claim window's 3 s.
    const r: unknown = await database.db.execute(
      sql`select extract(epoch from expires_at - now())::float8 as left from seat_turns where seat_id = 'm/taken'`,
    );
    const left = Number(((Array.isArray(r) ? r : (r as { rows: unknown[] }).rows) as { left: number }[])[0]?.left);
    expect(left).toBeGreaterThan(30);
    // The first holder's turn ends later (its settle refused, or it finds the lease gone): nothing of the
    // next holder's turn moves, not even after the time an unclaimed hand-off is kept.
    await turns.leave(first);
    await new Promise((r) => setTimeout(r, 1_300));
    expect(await holderOf("m/taken")).toBe("me:next");
    await turns.leave(t);
    expect(await holderOf("m/taken")).toBeUndefined();
  });

  it("issue 34 item 4: two controllers' waiters are served in the fleet-wide order they joined the line, not each controller's own first", async () => {
    const a = new SeatTurns(database.db, 30_000, "ra");
    const b = new SeatTurns(database.db, 30_000, "rb");
    const served: string[] = [];
    let inTurn = 0;
    const take = (turns: SeatTurns, holder: string, holdMs: number) =>
      withSeatTurn(turns, join(turns, "m/shared", holder), async (turn) => {
        inTurn++;
        expect(inTurn).toBe(1);
        expect(turn.held).toBe(true);
        await new Promise((r) => setTimeout(r, holdMs));
        served.push(holder);
        inTurn--;
      });
    let joinedAll!: () => void;
    const allJoined = new Promise<void>((r) => (joinedAll = r));
    const all = [
      withSeatTurn(a, join(a, "m/shared", "ra:0"), async () => {
        await allJoined;
        served.push("ra:0");
      }),
    ];
    while (!(await holderOf("m/shared"))) await new Promise((r) => setTimeout(r, 1));
    // Joined alternately, each once the one before it is in the line: a's own waiters never go first.
    const joined: string[] = [];
    for (let i = 1; i <= 8; i++) {
      const [turns, holder] = i % 2 ? ([b, `rb:${i}`] as const) : ([a, `ra:${i}`] as const);
      const before = a.waiting("m/shared") + b.waiting("m/shared");
      all.push(take(turns, holder, 5));
      joined.push(holder);
      while (a.waiting("m/shared") + b.waiting("m/shared") <= before) await new Promise((r) => setTimeout(r, 1));
    }
    joinedAll();
    await Promise.all(all);
    expect(served).toEqual(["ra:0", ...joined]);
    expect(await holderOf("m/shared")).toBeUndefined();
  });

  it("issue 34 item 4: a waiter whose controller is dead does not hold the line: skipped at once when its instance lease expired, passed over after the claim window when it has not", async () => {
    // 'dead''s lease expired a second ago (its last heartbeat is recent: the lease decides); 'silent''s lease is live but it is gone (killed a moment ago).
    await database.db.execute(
      sql`insert into controller_instances (id, pid, host, heartbeat_at, lease_expires_at) values ('dead', 1, 'test', now(), now() - interval '1 second'), ('silent', 1, 'test', now(), now() + interval '10 seconds')`,
    );
    const live = new SeatTurns(database.db, 30_000, "me");
    const first = await join(live, "m/dead", "me:first", 1_000);
    expect(first.held).toBe(true);
    // Two waiters of dead controllers joined before this controller's next one.
    await database.db.execute(sql`insert into seat_waiters (holder, seat_id, admitted_at, expires_at) values
      ('dead:1', 'm/dead', now() - interval '2 seconds', now() + interval '20 seconds'),
      ('silent:1', 'm/dead', now() - interval '1 seconds', now() + interval '20 seconds')`);
    const next = join(live, "m/dead", "me:next", 20_000);
    while (live.waiting("m/dead") < 1) await new Promise((r) => setTimeout(r, 5));
    const t0 = performance.now();
    await live.leave(first);
    // The lease went past 'dead' to 'silent' (the head of the live line), which never claims it.
    expect(await holderOf("m/dead")).toBe("silent:1");
    const t = await next;
    const waitedMs = performance.now() - t0;
    expect(t.held).toBe(true);
    expect(waitedMs).toBeGreaterThan(TURN_CLAIM_MS - 500);
    expect(waitedMs).toBeLessThan(TURN_CLAIM_MS + 1_500);
    await live.leave(t);
    expect(await holderOf("m/dead")).toBeUndefined();
  });
});
