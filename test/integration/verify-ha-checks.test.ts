/**
 * Issue 34 item 6: the HA run's journal checks (verify/ha-checks.ts) and the bench's HA goals
 * (bench/ha-report.ts) must be able to fail. The checks run on a real PostgreSQL against the
 * journal's receipt columns they read; the goals on hand-made results.
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installWriteAudit, pausedWrites, seatOverlaps } from "../../verify/ha-checks.js";
import { deliveryGapMs } from "../../verify/ha-run.js";
import { judgeHaGoals } from "../../bench/ha-report.js";
import type { Op } from "../../verify/history.js";
import { freshPostgres } from "../kit/test-db.js";

const _at = (s: number) => new Date(Date.UTC(2026, 11, 6, 4, 0, s));

describe.runIf(process.env.DATABASE_URL)("issue 34 item 6: the HA run's journal checks", () => {
  let db: postgres.Sql;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const fresh = await freshPostgres();
    drop = fresh.drop;
    db = postgres(fresh.url, { max: 1, onnotice: () => {} });
    await db.unsafe(`
      create table delivery_receipts (id text primary key, seat_id text not null, state text not null, created_at timestamptz not null default now());
      create table operator_call_receipts (id text primary key, state text not null, created_at timestamptz not null default now());
      create table seat_turns (seat_id text primary key, holder text not null);`);
    // Roles are the server's, not the database's: made here, dropped in afterAll.
    await db.unsafe("create role verify_paused_replica superuser").catch(() => {});
    await installWriteAudit(db);
  });
  afterAll(async () => {
    await db?.end();
    await drop?.();
    const admin = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
    await admin.unsafe("drop role if exists verify_paused_replica").finally(() => admin.end());
  });

  it("a message arriving in a seat before the previous one settled is an overlap; one after the other is not", async () => {
    await db`insert into delivery_receipts (id, seat_id, state) values ('a', 's1', 'dispatching'), ('b', 's1', 'dispatching'), ('c', 's2', 'dispatching'), ('d', 's2', 'dispatching'), ('e', 's3', 'dispatching')`;
    await db`update delivery_receipts set state = 'delivered' where id in ('a', 'b', 'c', 'd')`;
    const settled = new Map(
      (await db<{ id: string; at: Date }[]>`select id, at from verify_writes where op = 'UPDATE'`).map((r) => [
        r.id,
        r.at.getTime(),
      ]),
    );
    const before = (id: string, ms: number) => settled.get(id)! - ms;
    const r = await seatOverlaps(db, [
      // s1: b arrives after a settled. s2: d arrives while c is still in flight. s3: e never settled.
      { seat: "s1", deliveryId: "a", atMs: before("a", 50) },
      { seat: "s1", deliveryId: "b", atMs: settled.get("a")! + 1 },
      { seat: "s2", deliveryId: "c", atMs: before("c", 50) },
      { seat: "s2", deliveryId: "d", atMs: before("c", 10) },
      { seat: "s3", deliveryId: "e", atMs: Date.now() },
    ]);
    expect(r.seat_overlaps).toBe(1);
    expect(r.max_in_flight_per_seat).toBe(2);
    expect(r.dispatched_unsettled).toBe(1);
    expect(r.examples).toEqual([expect.objectContaining({ seat: "s2", id: "d", inFlight: ["c"] })]);
  });

  it("a delivery whose seat turn was taken over (ADR 0043) is no longer in flight, though its receipt still is", async () => {
    await db`insert into delivery_receipts (id, seat_id, state) values ('k', 's4', 'dispatching'), ('l', 's4', 'dispatching')`;
    await db`insert into seat_turns (seat_id, holder) values ('s4', 'killed-replica:k')`;
    await db`delete from seat_turns where seat_id = 's4'`;
    const [left] = await db<{ at: Date }[]>`select at from verify_writes where tbl = 'seat_turns' and id = 'k'`;
    const r = await seatOverlaps(db, [
      { seat: "s4", deliveryId: "k", atMs: left!.at.getTime() - 50 },
      { seat: "s4", deliveryId: "l", atMs: left!.at.getTime() + 1 },
    ]);
    expect(r.seat_overlaps).toBe(0);
    expect(r.max_in_flight_per_seat).toBe(1);
  });

  it("a paused replica's state change after it resumes, of a receipt admitted before the pause, is counted once", async () => {
    const pausedAt = new Date(Date.now() - 60_000);
    await db`insert into operator_call_receipts (id, state, created_at) values ('old', 'in_flight', ${new Date(pausedAt.getTime() - 1_000)}), ('new', 'in_flight', now())`;
    const resumedAt = new Date(Date.now() - 100);
    await db.begin(async (tx) => {
      await tx.unsafe("set local session authorization verify_paused_replica");
      await tx`update operator_call_receipts set state = 'settled' where id in ('old', 'new')`;
      // Retention-like: the row is written, its state stays.
      await tx`update operator_call_receipts set state = 'settled' where id = 'old'`;
    });
    const r = await pausedWrites(db, [{ role: "verify_paused_replica", pausedAt, resumedAt }]);
    expect(r.count).toBe(1);
    expect(r.examples).toEqual([expect.objectContaining({ id: "old", tbl: "operator_call_receipts" })]);
    // Another replica's writes are not the paused one's.
    expect((await pausedWrites(db, [{ role: "someone_else", pausedAt, resumedAt }])).count).toBe(0);
  });
});

describe("issue 34 item 6: the HA figures and goals", () => {
  it("the delivery gap is the longest wait between two delivered answers in the window", () => {
    const op = (type: Op["type"], atMs: number): Op => ({
      type,
      op: 0,
      lead: "l",
      deliveryId: "d",
      seat: "s",
      text: "t",
      atMs,
    });
    const h = [op("ok", 100), op("info", 900), op("ok", 1_500), op("ok", 1_600)];
    expect(deliveryGapMs(h, 0, 2_000)).toBe(1_400);
    expect(deliveryGapMs(h, 0, 5_000)).toBe(3_400);
  });

  it("every HA goal is met by a calm result and each fails on its own figure", () => {
    const calm = {
      kills: 5,
      kill_gap_p99_ms: 1_200,
      agents_shown_offline: 0,
      lost: 0,
      duplicates: 0,
      paused_writes_after_resume: 0,
      max_in_flight_per_seat: 1,
      resume_after_promotion_ms: 9_000,
      fair_max_over_mean_turns: 1.1,
      fair_worst_caller_mean_over_mean: 1.01,
      fair_max_over_mean: 1.5,
      fair_one_replica_max_over_mean: 1.6,
      fair_skipped_turns: 0,
      fair_max_turns_waited: 7,
      tokens_valid: 18,
      tokens_checked: 18,
    };
    const judged = (goals: ReturnType<typeof judgeHaGoals>) => goals.filter((g) => !g.reported);
    expect(judged(judgeHaGoals({ high_availability: calm })).every((g) => g.met === true)).toBe(true);
    const bad: Record<string, number> = {
      kill_gap_p99_ms: 6_000,
      agents_shown_offline: 1,
      lost: 1,
      paused_writes_after_resume: 2,
      max_in_flight_per_seat: 2,
      resume_after_promotion_ms: 31_000,
      fair_max_over_mean_turns: 2.2,
      fair_worst_caller_mean_over_mean: 2.1,
      fair_skipped_turns: 3,
      fair_max_turns_waited: 8,
      tokens_valid: 12,
    };
    for (const [k, v] of Object.entries(bad)) {
      const goals = judgeHaGoals({ high_availability: { ...calm, [k]: v } });
      expect(
        goals.filter((g) => g.met === false),
        k,
      ).toHaveLength(1);
    }
    // ADR 0046: the slowest call in ms (the box's worst stall) is shown beside its one-replica control, never judged.
    const stalled = judgeHaGoals({ high_availability: { ...calm, fair_max_over_mean: 2.7 } });
    expect(stalled.filter((g) => g.met === false)).toHaveLength(0);
    expect(stalled.find((g) => g.reported)).toMatchObject({ measured: "2.7× (one replica: 1.6×)", met: null });
    expect(judgeHaGoals({ high_availability: { ...calm, kills: 2 } })[0]!.met).toBeNull();
    expect(judgeHaGoals({ high_availability: "skipped: no HAProxy" }).every((g) => g.met === null)).toBe(true);
  });
});
