/**
 * Issue 34 item 3 (ADR 0039): a seat's turn order is the fleet-wide admission order, and an admission's
 * time is where it stands in that order. Two controllers on one PostgreSQL admit to one busy seat; one
 * admission (C, replica A) is slow — its statement started first but is held, as a loaded server holds
 * one, here by another transaction's claim on its call id — and commits after replica B's (D). The busy
 * seat's settle, run between the two commits, can only hand the turn to D. Before, C's admission time
 * was its statement's start (now()): C stood before D in the line and in the receipts, so D's delivery
 * went first while "admitted later" (bench:ha counted such inversions as skipped turns, 2 of 200). Now
 * admissions to one seat take their time under a per-seat transaction lock, in commit order: C's time
 * is after D's, and the order the line served is the admission order.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import postgres from "postgres";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../controller/db/open.js";
import { seedMailboxSeat } from "../kit/seed-seat.js";
import { deliveryReceipts, seatWaiters } from "../../controller/db/schema.js";
import { admitDelivery, type AdmitParams } from "../../controller/delivery/admit.js";
import { settleDispatched } from "../../controller/delivery/settle.js";
import { CallState } from "../../controller/journal/call-receipts.js";
import { registerInstance, type InstanceEpoch } from "../../controller/journal/instances.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { available } from "../kit/requirements.js";
import { freshPostgres } from "../kit/test-db.js";
import { until } from "../kit/until.js";

const SEAT = "box/inbox";

describe.runIf(available("postgres"))("issue 34 item 3: admission time is the seat's turn order (PostgreSQL)", () => {
  let database: Database;
  let side: postgres.Sql;
  let drop: () => Promise<void> = async () => {};
  const db = () => database.db;

  beforeAll(async () => {
    const pg = await freshPostgres();
    drop = pg.drop;
    database = await openDatabase({ url: pg.url });
    side = postgres(pg.url, { max: 2, onnotice: () => {} });
    await seedMailboxSeat(db(), SEAT);
  });
  afterAll(async () => {
    await side?.end();
    await database?.close();
    await drop();
  });

  const replica = async (): Promise<InstanceEpoch> => {
    const instance = randomUUID();
    return { instance, epoch: await registerInstance(db(), instance, process.pid, hostname(), 60_000) };
  };
  const admission = (f: InstanceEpoch, id = randomUUID()): AdmitParams => ({
    id,
    tool: "message_seat",
    conversationId: `conversation-${id}`,
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
  const createdAt = async (id: string) =>
    (await db().select().from(deliveryReceipts).where(eq(deliveryReceipts.id, id)))[0]!.createdAt.getTime();

  it("an admission that started first but committed after another stands after it, as the settle's hand-off saw them", async () => {
    const a = await replica();
    const b = await replica();
    // H holds the seat.
    const h = admission(a);
    expect((await admitDelivery(db(), h)).leaseTaken).toBe(true);

    // C's statement starts, and is held by another transaction's claim on its call id.
    const c = admission(a);
    const hold = side.reserve();
    const held = await hold;
    await held`begin`;
    await held`insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state) values (${c.id}, 'message_seat', ${c.conversationId}, ${c.fingerprint}, 'in_flight')`;
    const slow = admitDelivery(db(), c);
    await until(
      async () =>
        (
          await side<
            { n: number }[]
          >`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%clankie:admit%'`
        )[0]!.n === 1 || undefined,
      "C's admission waiting",
      10,
    );
    // D, on replica B, is admitted meanwhile: the seat is busy, D joins the line.
    const d = admission(b);
    expect((await admitDelivery(db(), d)).leaseTaken).toBe(false);
    // H settles: the line it sees holds D only, so D gets the turn.
    const { handedTo } = await settleDispatched(db(), {
      id: h.id,
      seatId: SEAT,
      conversationId: h.conversationId,
      contentFingerprint: h.contentFingerprint,
      callState: CallState.Settled,
      body: { outcome: "delivered", deliveryId: h.id },
      outcome: { state: ReceiptState.Delivered, detail: "delivered" },
      previousIds: [],
      holder: h.holder,
      leaseSeconds: 60,
      now: new Date(),
      fence: a,
    });
    expect(handedTo).toBe(d.holder);
    // C's way is clear: it commits after D, and takes its place after D.
    await held`rollback`;
    held.release();
    const admitted = await slow;
    expect(admitted.inserted).toBe(true);
    expect(admitted.leaseTaken).toBe(false);
    expect(await createdAt(c.id)).toBeGreaterThan(await createdAt(d.id));
    const line = await db().select().from(seatWaiters).where(eq(seatWaiters.seatId, SEAT));
    expect(line.map((w) => w.holder)).toEqual([c.holder]);
  });
});
