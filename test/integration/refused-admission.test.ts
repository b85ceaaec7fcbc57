/**
 * ADR 0033, a refused admission recorded by id (controller/journal/refused-admission.ts), on a
 * real PostgreSQL: whichever commits first, the refused attempt ends not sent with its lease
 * freed; and the refusal touches nothing but what this controller's own attempt wrote — never a
 * call of another controller, another conversation or other arguments, which may be in flight
 * with the same id and must keep its receipt and its seat.
 */
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../controller/db/open.js";
import { recordRefusedAdmission, type RefusedAdmission } from "../../controller/journal/refused-admission.js";
import { available } from "../kit/requirements.js";
import { freshPostgres } from "../kit/test-db.js";

/** drizzle's execute answers an array on postgres-js and `{ rows }` on PGlite. */
const rowsOf = <T = Record<string, unknown>>(r: unknown): T[] =>
  (Array.isArray(r) ? r : (r as { rows: T[] }).rows) as T[];

const ME = "instance-me";

describe.runIf(available("postgres"))("a refused admission recorded by id", () => {
  let pg: { url: string; drop: () => Promise<void> };
  let database: Database;
  beforeAll(async () => {
    pg = await freshPostgres();
    database = await openDatabase({ url: pg.url });
  });
  afterAll(async () => {
    await database?.close();
    await pg?.drop();
  });

  const refusal = (id: string, o: Partial<RefusedAdmission> = {}): RefusedAdmission => ({
    kind: "refused_admission",
    id,
    tool: "message_seat",
    conversationId: "conv-a",
    fingerprint: "fp-1",
    controllerInstance: ME,
    body: {
      schemaVersion: 1,
      deliveryId: id,
      outcome: "undelivered",
      reason: "journal_unavailable",
      detail: "refused",
    },
    reason: "journal_unavailable",
    detail: "refused",
    holder: `${ME}:${id}`,
    now: new Date(),
    ...o,
  });
  /** What an admission writes: the call in flight, the receipt dispatching, the seat's lease. */
  const admit = async (
    id: string,
    o: { instance?: string; conversation?: string; fingerprint?: string; seat?: string } = {},
  ) => {
    const instance = o.instance ?? ME;
    const seat = o.seat ?? `seat-${id}`;
    const inserted = rowsOf(
      await database.db.execute(sql`insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, controller_instance)
      values (${id}, 'message_seat', ${o.conversation ?? "conv-a"}, ${o.fingerprint ?? "fp-1"}, 'in_flight', ${instance}) on conflict do nothing returning id`),
    );
    if (inserted.length === 0) return false;
    await database.db.execute(
      sql`insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state) values (${id}, ${o.conversation ?? "conv-a"}, ${seat}, 'cf', 'auto', 'dispatching')`,
    );
    await database.db.execute(
      sql`insert into seat_turns (seat_id, holder, expires_at) values (${seat}, ${`${instance}:${id}`}, now() + interval '30 seconds')`,
    );
    return true;
  };
  const stateOf = async (id: string) => {
    const [call] = rowsOf<{ state: string; reason: string | null }>(
      await database.db.execute(
        sql`select state, result->>'reason' as reason from operator_call_receipts where id = ${id}`,
      ),
    );
    const [receipt] = rowsOf<{ state: string }>(
      await database.db.execute(sql`select state from delivery_receipts where id = ${id}`),
    );
    const leases = rowsOf(await database.db.execute(sql`select holder from seat_turns where holder like ${`%:${id}`}`));
    return { call: call?.state, reason: call?.reason ?? null, receipt: receipt?.state, leases: leases.length };
  };

  it("ADR 0033: committed after the refused admission, it settles the call and the receipt not sent and frees the seat", async () => {
    const id = randomUUID();
    await admit(id);
    await recordRefusedAdmission(database.db, refusal(id));
    expect(await stateOf(id)).toEqual({
      call: "settled",
      reason: "journal_unavailable",
      receipt: "not_sent",
      leases: 0,
    });
  });

  it("ADR 0033: committed before it, the admission that comes later writes nothing (no receipt, no lease)", async () => {
    const id = randomUUID();
    await recordRefusedAdmission(database.db, refusal(id));
    expect(await admit(id)).toBe(false);
    expect(await stateOf(id)).toEqual({
      call: "settled",
      reason: "journal_unavailable",
      receipt: undefined,
      leases: 0,
    });
  });

  it("ADR 0033: recorded twice (the retry after a commit it did not hear), the answer is the same", async () => {
    const id = randomUUID();
    await admit(id);
    await recordRefusedAdmission(database.db, refusal(id));
    await recordRefusedAdmission(database.db, refusal(id));
    expect(await stateOf(id)).toEqual({
      call: "settled",
      reason: "journal_unavailable",
      receipt: "not_sent",
      leases: 0,
    });
  });

  for (const [what, other] of [
    ["another controller's", { instance: "instance-other" }],
    ["another conversation's", { conversation: "conv-b" }],
    ["a call with other arguments", { fingerprint: "fp-2" }],
  ] as const) {
    it(`ADR 0033: ${what} call in flight with the same id keeps its receipt dispatching and its seat`, async () => {
      const id = randomUUID();
      await admit(id, other);
      await recordRefusedAdmission(database.db, refusal(id));
      expect(await stateOf(id)).toEqual({ call: "in_flight", reason: null, receipt: "dispatching", leases: 1 });
    });
  }

  it("ADR 0033: a call that takes no lease (a question's answer) is refused by its call receipt alone", async () => {
    const id = randomUUID();
    await database.db.execute(
      sql`insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, controller_instance) values (${id}, 'message_seat', 'conv-a', 'fp-1', 'in_flight', ${ME})`,
    );
    await recordRefusedAdmission(database.db, refusal(id, { holder: null }));
    expect(await stateOf(id)).toEqual({
      call: "settled",
      reason: "journal_unavailable",
      receipt: undefined,
      leases: 0,
    });
  });
});
