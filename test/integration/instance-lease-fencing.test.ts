/**
 * Issue 34 item 1 (ADR 0036): every write an instance makes for a delivery carries its (instance,
 * epoch), and the journal refuses it when that lease has expired by the database's clock or the
 * epoch is stale — admission, the settle statement, the seat-turn statements (turn.ts, turn-join.ts:
 * joining the seat's line, passing, releasing and polling for the lease), call admission and
 * settle, the hire settle and the settle paths of unresolved originals. A peer takes over only
 * expired leases, whatever the pid or host name of the instance says.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { openDatabase, type Database } from "../../controller/db/open.js";
import { seedMailboxSeat } from "../kit/seed-seat.js";
import {
  callReceipts,
  controllerInstances,
  deliveryReceipts,
  hireReceipts,
  seatTurns,
  seatWaiters,
} from "../../controller/db/schema.js";
import { admitDelivery, type AdmitParams } from "../../controller/delivery/admit.js";
import type { SettleParams } from "../../controller/delivery/receipt-types.js";
import {
  settleAbandoned,
  settleDispatched,
  settleFoundInSession,
  settleProvenAbsent,
  type OriginalSettleDeps,
} from "../../controller/delivery/settle.js";
import { passTurn, pollTurn, releaseLease, type TurnWriter } from "../../controller/delivery/turn-statements.js";
import { joinTurn } from "../../controller/delivery/turn-join.js";
import { admitCall, CallState, settleCall } from "../../controller/journal/call-receipts.js";
import { settleHireOutcome } from "../../controller/journal/hire-outcome.js";
import {
  FencedWriteError,
  recoverOrphans,
  registerInstance,
  renewLease,
  type InstanceEpoch,
} from "../../controller/journal/instances.js";
import { HireState, unconfirmedBody } from "../../controller/hire/bodies.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { DRIVERS, freshPostgres, seedPglite, tempDir } from "../kit/test-db.js";
import { tryTakeLease } from "../kit/seat-lease.js";
import { join } from "node:path";

const SEAT = "box/inbox";

describe.each(DRIVERS)(
  "issue 34 item 1: the journal refuses a write whose instance lease expired or whose epoch is stale (%s)",
  (driver) => {
    let database: Database;
    let drop: () => Promise<void> = async () => {};
    const db = () => database.db;
    /** The seat-turn statements as the instance `fence` writes them, with a 60 s seat lease. */
    const asWriter = (fence: InstanceEpoch): TurnWriter => ({ db: db(), leaseMs: 60_000, fence });

    beforeAll(async () => {
      if (driver === "pglite") {
        const dir = tempDir("lease");
        seedPglite(dir);
        database = await openDatabase({ dataDir: join(dir, "pgdata") });
      } else {
        const pg = await freshPostgres();
        drop = pg.drop;
        database = await openDatabase({ url: pg.url });
      }
      await seedMailboxSeat(db(), SEAT);
    });
    afterAll(async () => {
      await database?.close();
      await drop();
    });
    beforeEach(async () => {
      await db().delete(seatTurns);
      await db().delete(seatWaiters);
    });

    /** A live instance with a fresh epoch. */
    const live = async (): Promise<InstanceEpoch> => {
      const instance = randomUUID();
      return { instance, epoch: await registerInstance(db(), instance, process.pid, hostname(), 60_000) };
    };
    /** Its lease past by the database's clock, as after a pause. */
    const expire = (f: InstanceEpoch) =>
      db().execute(
        sql`update controller_instances set lease_expires_at = now() - interval '1 second' where id = ${f.instance}`,
      );
    /** Its instance re-registered: the old epoch is stale though the row's lease is live. */
    const restale = async (f: InstanceEpoch): Promise<InstanceEpoch> => ({
      instance: f.instance,
      epoch: await registerInstance(db(), f.instance, process.pid, hostname(), 60_000),
    });

    const admitParams = (f: InstanceEpoch, id = randomUUID()): AdmitParams => ({
      id,
      tool: "message_seat",
      conversationId: "c",
      fingerprint: `fp-${id}`,
      controllerInstance: f.instance,
      controllerEpoch: f.epoch,
      seatRef: SEAT,
      contentFingerprint: `content-${id}`,
      mode: "auto",
      inReplyTo: null,
      holder: `${f.instance}:${id}`,
      leaseSeconds: 60,
      turnWaitSeconds: 25,
      abandonedSince: new Date(0),
      staleBefore: new Date(0),
    });
    const settleParams = (f: InstanceEpoch, id: string): SettleParams => ({
      id,
      seatId: SEAT,
      conversationId: "c",
      contentFingerprint: `content-${id}`,
      callState: CallState.Settled,
      body: { outcome: "delivered", deliveryId: id },
      outcome: { state: ReceiptState.Delivered, detail: "delivered" },
      previousIds: [],
      holder: `${f.instance}:${id}`,
      leaseSeconds: 60,
      now: new Date(),
      fence: f,
    });
    const rowsOf = async (id: string) => ({
      call: (await db().select().from(callReceipts).where(eq(callReceipts.id, id)))[0],
      receipt: (await db().select().from(deliveryReceipts).where(eq(deliveryReceipts.id, id)))[0],
      lease: (await db().select().from(seatTurns).where(eq(seatTurns.seatId, SEAT)))[0],
    });
    const line = async () =>
      (await db().select().from(seatWaiters).where(eq(seatWaiters.seatId, SEAT)).orderBy(seatWaiters.admittedAt)).map(
        (w) => w.holder,
      );
    /** Puts `holder` in the seat's line directly, `ago` ms back (the line is in admission order). */
    const queue = (holder: string, ago = 0) =>
      db().execute(
        sql`insert into seat_waiters (holder, seat_id, admitted_at, expires_at) values (${holder}, ${SEAT}, now() - make_interval(secs => ${ago / 1000}::float8), now() + interval '25 seconds')`,
      );

    for (const [how, lose] of [
      ["an expired lease", async (f: InstanceEpoch) => (await expire(f), f)],
      ["a stale epoch", async (f: InstanceEpoch) => (await restale(f), f)],
    ] as const) {
      it(`admission with ${how} writes nothing: no call receipt, no delivery receipt, no seat lease`, async () => {
        const f = await lose(await live());
        const p = admitParams(f);
        await expect(admitDelivery(db(), p)).rejects.toBeInstanceOf(FencedWriteError);
        const r = await rowsOf(p.id);
        expect(r).toEqual({ call: undefined, receipt: undefined, lease: undefined });
      });

      it(`the settle statement with ${how} writes nothing: the receipt stays as it was and the seat lease is not moved`, async () => {
        const f = await live();
        const p = admitParams(f);
        expect((await admitDelivery(db(), p)).leaseTaken).toBe(true);
        const waiter = `${(await live()).instance}:next`;
        await queue(waiter);
        await lose(f);
        await expect(settleDispatched(db(), settleParams(f, p.id))).rejects.toBeInstanceOf(FencedWriteError);
        const r = await rowsOf(p.id);
        expect(r.call?.state).toBe(CallState.InFlight);
        expect(r.receipt?.state).toBe(ReceiptState.Dispatching);
        expect(r.lease?.holder).toBe(p.holder);
        expect(await line()).toEqual([waiter]);
      });

      it(`with ${how} a replica can neither take a free seat nor join the seat's line (ADR 0039's line, fenced)`, async () => {
        const f = await lose(await live());
        await expect(joinTurn(asWriter(f), SEAT, `${f.instance}:notice`, 25_000)).rejects.toBeInstanceOf(
          FencedWriteError,
        );
        expect([(await rowsOf("none")).lease, await line()]).toEqual([undefined, []]);
        const other = await live();
        expect(await joinTurn(asWriter(other), SEAT, `${other.instance}:held`, 25_000)).toBe(true);
        await expect(joinTurn(asWriter(f), SEAT, `${f.instance}:stop`, 25_000)).rejects.toBeInstanceOf(
          FencedWriteError,
        );
        expect([(await rowsOf("none")).lease?.holder, await line()]).toEqual([`${other.instance}:held`, []]);
      });

      it(`with ${how} a replica can neither pass nor hand on its seat lease to the head of the line, nor leave the line`, async () => {
        const [f, other] = [await live(), await live()];
        expect(await joinTurn(asWriter(f), SEAT, `${f.instance}:held`, 25_000)).toBe(true);
        await queue(`${other.instance}:head`, 2_000);
        await queue(`${f.instance}:mine`, 1_000);
        await lose(f);
        expect(await passTurn(asWriter(f), SEAT, `${f.instance}:held`)).toBeNull();
        expect(await passTurn(asWriter(f), SEAT, `${f.instance}:mine`)).toBeNull();
        expect([(await rowsOf("none")).lease?.holder, await line()]).toEqual([
          `${f.instance}:held`,
          [`${other.instance}:head`, `${f.instance}:mine`],
        ]);
      });

      it(`with ${how} a replica's poll takes no lease: neither a free one for its waiter nor one for the head of the line`, async () => {
        const [f, other] = [await live(), await live()];
        await queue(`${f.instance}:first`, 2_000);
        await queue(`${other.instance}:second`, 1_000);
        await lose(f);
        await expect(pollTurn(asWriter(f), SEAT, f.instance, null)).rejects.toBeInstanceOf(FencedWriteError);
        expect((await rowsOf("none")).lease).toBeUndefined();
        // An expired seat lease in its own holder's name is not taken back either.
        await db().execute(
          sql`insert into seat_turns (seat_id, holder, expires_at) values (${SEAT}, ${`${f.instance}:first`}, now() - interval '1 second')`,
        );
        await expect(pollTurn(asWriter(f), SEAT, f.instance, null)).rejects.toBeInstanceOf(FencedWriteError);
        expect((await rowsOf("none")).lease?.holder).toBe(`${f.instance}:first`);
        expect(await line()).toContain(`${other.instance}:second`);
      });

      it(`the seat-turn statements with ${how} release nothing: neither the bare release nor a pass with nobody in line`, async () => {
        const f = await lose(await live());
        expect(await tryTakeLease(db(), SEAT, `${f.instance}:held`, 60_000)).toBe(true);
        await releaseLease(asWriter(f), SEAT, `${f.instance}:held`);
        expect(await passTurn(asWriter(f), SEAT, `${f.instance}:held`)).toBeNull();
        expect([(await rowsOf("none")).lease?.holder, await line()]).toEqual([`${f.instance}:held`, []]);
      });

      it(`call admission and call settle with ${how} are refused (hire and question answers)`, async () => {
        const f = await lose(await live());
        const id = randomUUID();
        await expect(
          db().transaction((tx) =>
            admitCall(tx, { id, tool: "hire_agent", conversationId: "c", fingerprint: "fp", fence: f }),
          ),
        ).rejects.toBeInstanceOf(FencedWriteError);
        expect((await rowsOf(id)).call).toBeUndefined();
        await db().insert(callReceipts).values({
          id,
          tool: "hire_agent",
          conversationId: "c",
          fingerprint: "fp",
          state: CallState.InFlight,
          controllerInstance: f.instance,
          controllerEpoch: f.epoch,
        });
        await expect(
          settleCall(db(), id, CallState.Settled, { outcome: "spawned" }, new Date(), { owner: f, writer: f }),
        ).rejects.toBeInstanceOf(FencedWriteError);
        expect((await rowsOf(id)).call?.state).toBe(CallState.InFlight);
      });

      it(`the hire settle with ${how} writes neither the hire receipt nor the call receipt`, async () => {
        const f = await live();
        const id = randomUUID();
        await db().transaction((tx) =>
          admitCall(tx, { id, tool: "hire_agent", conversationId: "c", fingerprint: "fp", fence: f }),
        );
        await db().insert(hireReceipts).values({
          id,
          conversationId: "c",
          fingerprint: "fp",
          machine: "box",
          harness: "codex",
          state: HireState.Launching,
        });
        await lose(f);
        const body = unconfirmedBody({ hireId: id, machine: "box", harness: "codex" }, "start_unconfirmed", "lost");
        await expect(
          settleHireOutcome(db(), {
            kind: "hire",
            id,
            state: HireState.Spawned,
            unresolved: false,
            body: { ...body, outcome: "spawned" },
            now: new Date(),
            fence: f,
          }),
        ).rejects.toBeInstanceOf(FencedWriteError);
        expect((await db().select().from(hireReceipts).where(eq(hireReceipts.id, id)))[0]?.state).toBe(
          HireState.Launching,
        );
        expect((await rowsOf(id)).call?.state).toBe(CallState.InFlight);
      });

      it(`the settles of an unresolved original (lead, owner, unattended, reconcile) with ${how} are refused`, async () => {
        const f = await live();
        const p = admitParams(f);
        await admitDelivery(db(), p);
        await settleDispatched(db(), {
          ...settleParams(f, p.id),
          callState: CallState.Uncertain,
          outcome: { state: ReceiptState.Uncertain, detail: "lost" },
        });
        await lose(f);
        const delivery = (await rowsOf(p.id)).receipt!;
        // The settle paths of an original, written under the lost lease's fence.
        const deps: OriginalSettleDeps = {
          db: db(),
          now: () => new Date(),
          lease: { fence: () => f },
          onJournalChange: () => {},
        };
        await expect(settleAbandoned(deps, delivery, "lead", "c", {})).rejects.toBeInstanceOf(FencedWriteError);
        await expect(settleFoundInSession(deps, delivery, "native")).rejects.toBeInstanceOf(FencedWriteError);
        await expect(settleProvenAbsent(deps, delivery, "c", {})).rejects.toBeInstanceOf(FencedWriteError);
        expect((await rowsOf(p.id)).receipt?.state).toBe(ReceiptState.Uncertain);
      });
    }

    it("with a live lease the same writes go through: admitted, settled delivered, the seat lease released", async () => {
      const f = await live();
      const p = admitParams(f);
      await admitDelivery(db(), p);
      await settleDispatched(db(), settleParams(f, p.id));
      const r = await rowsOf(p.id);
      expect([r.call?.state, r.receipt?.state, r.lease]).toEqual([
        CallState.Settled,
        ReceiptState.Delivered,
        undefined,
      ]);
    });

    it("with a live lease the seat turn goes through: a join takes the free seat, the pass hands it to the head of the line, a poll claims it", async () => {
      const [f, other] = [await live(), await live()];
      expect(await joinTurn(asWriter(f), SEAT, `${f.instance}:a`, 25_000)).toBe(true);
      expect(await joinTurn(asWriter(other), SEAT, `${other.instance}:b`, 25_000)).toBe(false);
      expect(await passTurn(asWriter(f), SEAT, `${f.instance}:a`)).toBe(`${other.instance}:b`);
      expect((await pollTurn(asWriter(other), SEAT, other.instance, null)).holder).toBe(`${other.instance}:b`);
      expect([(await rowsOf("none")).lease?.holder, await line()]).toEqual([`${other.instance}:b`, []]);
    });

    it("issue 34 item 1: a waiter whose replica's instance lease expired is passed over at once, though its heartbeat is fresh", async () => {
      const [holder, gone, next] = [await live(), await live(), await live()];
      expect(await joinTurn(asWriter(holder), SEAT, `${holder.instance}:a`, 25_000)).toBe(true);
      await queue(`${gone.instance}:b`, 2_000);
      await queue(`${next.instance}:c`, 1_000);
      await expire(gone);
      expect(await passTurn(asWriter(holder), SEAT, `${holder.instance}:a`)).toBe(`${next.instance}:c`);
    });

    it("a lease is renewed only while live; a re-registered instance gets a larger epoch", async () => {
      const f = await live();
      expect((await renewLease(db(), f, 60_000)).renewed).toBe(true);
      await expire(f);
      expect((await renewLease(db(), f, 60_000)).renewed).toBe(false);
      const again = await restale(f);
      expect(again.epoch).toBeGreaterThan(f.epoch);
      expect((await renewLease(db(), f, 60_000)).renewed).toBe(false);
      expect((await renewLease(db(), again, 60_000)).renewed).toBe(true);
    });

    it("issue 36: the renewal says when a takeover is due, so the takeover's transaction runs only then", async () => {
      const peer = await live();
      const f = await live();
      await recoverOrphans(db(), peer, false, new Date()); // What earlier tests left.
      expect((await renewLease(db(), peer, 60_000)).takeoverDue).toBe(false);
      const p = admitParams(f);
      await admitDelivery(db(), p); // A call in flight and the seat's lease, both f's, while f is live.
      expect((await renewLease(db(), peer, 60_000)).takeoverDue).toBe(false);
      await expire(f);
      expect((await renewLease(db(), peer, 60_000)).takeoverDue).toBe(true);
      expect(await recoverOrphans(db(), peer, false, new Date())).toContain(p.id);
      expect((await renewLease(db(), peer, 60_000)).takeoverDue).toBe(false);
      // A seat lease alone of an instance whose lease expired is due too.
      expect(await tryTakeLease(db(), SEAT, `${f.instance}:left`, 60_000)).toBe(true);
      expect((await renewLease(db(), peer, 60_000)).takeoverDue).toBe(true);
    });

    it("a peer takes over a live lease's calls never, whatever its pid and host say; an expired one's at once, and its late settle is refused", async () => {
      const peer = await live();
      const f = await live();
      // A pid no process on this host has, on this host: the old (hostname, pid) rule called this dead.
      await db()
        .update(controllerInstances)
        .set({ pid: 2_000_000_000, host: hostname() })
        .where(eq(controllerInstances.id, f.instance));
      const p = admitParams(f);
      await admitDelivery(db(), p);
      expect(await recoverOrphans(db(), peer, false, new Date())).not.toContain(p.id);
      expect((await rowsOf(p.id)).call?.state).toBe(CallState.InFlight);
      expect((await rowsOf(p.id)).lease?.holder).toBe(p.holder);

      await expire(f);
      expect(await recoverOrphans(db(), peer, false, new Date())).toContain(p.id);
      const taken = await rowsOf(p.id);
      expect([taken.call?.state, taken.call?.controllerEpoch, taken.receipt?.state, taken.lease]).toEqual([
        CallState.Uncertain,
        null,
        ReceiptState.Uncertain,
        undefined,
      ]);
      // The woken instance, even once it has re-registered, cannot write "delivered" over what the fleet recorded.
      const back = await restale(f);
      await expect(settleDispatched(db(), settleParams(f, p.id))).rejects.toBeInstanceOf(FencedWriteError);
      await expect(settleDispatched(db(), settleParams(f, p.id), back)).rejects.toBeInstanceOf(FencedWriteError);
      expect((await rowsOf(p.id)).call?.state).toBe(CallState.Uncertain);
      expect((await rowsOf(p.id)).receipt?.state).toBe(ReceiptState.Uncertain);
    });
  },
);
