/**
 * Issue 34 item 5: a connection lost while an admission is on the wire (a primary killed or
 * failed over) is as ambiguous as no answer (ADR 0041): the server may commit the admission
 * though its answer never comes. The call is refused not sent, and that stays true: the late
 * commit is settled not sent, its seat's turn released, and a replay of the id answers the
 * refusal. Before, the lost connection was read as "nothing written": the receipt stayed
 * dispatching under a live controller, the turn held for its 30 s lease (a failover run waited
 * 25 s to deliver again), and a replay was refused receipt_in_use. PostgreSQL only, through
 * the relay (test/fixtures/pg-wire-relay.ts), which commits the held admission after the
 * controller's connection was reset.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { available } from "../kit/requirements.js";
import { startOutageFleet, type OutageFleet } from "../kit/outage-fleet.js";
import { until } from "../kit/until.js";

const META = "clankie/seat-call";

describe.runIf(available("postgres"))("issue 34 item 5: an admission whose connection is lost on the wire", () => {
  let outage: OutageFleet;
  beforeAll(async () => {
    outage = await startOutageFleet();
  });
  afterAll(async () => {
    await outage?.close();
  });

  it("the commit the server makes after the connection was lost is settled not sent, the seat free at once, and a replay answers the refusal", async () => {
    const { lead, proxy } = outage;
    let id = "";
    let text = "";
    let refused: Awaited<ReturnType<typeof lead.call>> | Error | undefined;
    // As in database-outage-crash.test.ts: the held admission must be one whole write (Bind,
    // Execute, Sync) on a connection that has it prepared; a call on another is delivered, and the next tried.
    for (let attempt = 0; refused === undefined; attempt++) {
      expect(attempt, "a call on a connection with the admission prepared").toBeLessThan(20);
      expect((await lead.call("list_seats", {})).isError).toBeFalsy();
      let fired = false;
      void proxy
        .freezeWhenClientSends("insert into operator_call_receipts", {
          deliverAfterClientCloses: true,
          onlyPrepared: true,
        })
        .then(() => {
          fired = true;
          // The connection that carried the admission goes; the server still has its bytes.
          proxy.cutClients();
        });
      id = randomUUID();
      text = `admission on the wire ${attempt}`;
      const res = await lead
        .call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } })
        .catch((e: Error) => e);
      if (fired) refused = res;
      else expect(res instanceof Error ? res.message : res.structuredContent).toMatchObject({ outcome: "delivered" });
    }
    const answer =
      refused instanceof Error ? refused.message : JSON.stringify(refused.structuredContent ?? refused.content);
    expect(answer).toMatch(/journal_unavailable/);
    expect(answer).toMatch(/nothing was dispatched/);

    // The server now commits the admission the controller was cut off from.
    proxy.thaw();
    // The receipt as the owner reads it (the fleet's database is its own, fresh one).
    const state = async () => (await outage.owner.receipts().catch(() => [])).find((r) => r.deliveryId === id)?.state;
    await until(async () => (await state()) !== undefined, "the held admission committed", 100);
    await until(async () => (await state()) === "not_sent", "the late admission settled not sent", 100).catch(
      async (e: Error) => {
        throw new Error(`${e.message}: still ${await state()}`);
      },
    );
    const reconciled = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(reconciled.structuredContent).toMatchObject({
      outcome: "undelivered",
      reason: "journal_unavailable",
      deliveryId: id,
    });
    expect(outage.mailbox.list("inbox").entries.some((e) => e.deliveryId === id)).toBe(false);
    const replay = await lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    expect(replay.structuredContent).toMatchObject({
      outcome: "undelivered",
      reason: "journal_unavailable",
      deliveryId: id,
    });
    // And the seat takes the next message at once, not after the 30 s lease.
    const next = await lead.call("message_seat", { seat: "inbox", message: "after the lost connection" });
    expect(next.structuredContent).toMatchObject({ outcome: "delivered" });
  }, 120_000);
});
