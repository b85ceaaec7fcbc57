/**
 * Issue 34, "never two deliveries in flight to one seat", at a PostgreSQL promotion: a delivery whose
 * settle is lost with the primary keeps its seat's turn until that settle is on record. The bench's
 * overlap (bench:ha, max_in_flight_per_seat 2, at the promotion) came from here: the settle went to
 * the retry queue without its lease, and the lease was released apart (retried every 250 ms) while
 * the settle was retried every second, so once the journal was back the next delivery reached the
 * seat before the first one's outcome was recorded. Checked with the bench's own measure
 * (verify/ha-checks.ts: a message arriving in the seat before its predecessor's receipt left
 * dispatching). PostgreSQL only, through the relay (test/fixtures/pg-wire-relay.ts).
 */
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installWriteAudit, seatOverlaps } from "../../verify/ha-checks.js";
import { startOutageFleet, type OutageFleet } from "../kit/outage-fleet.js";
import { available } from "../kit/requirements.js";
import { until } from "../kit/until.js";

describe.runIf(available("postgres"))("issue 34: a settle lost with the primary keeps the seat's turn", () => {
  let outage: OutageFleet;
  let journal: postgres.Sql;
  beforeAll(async () => {
    outage = await startOutageFleet();
    journal = (outage.fleet.controller.database.db as unknown as { $client: postgres.Sql }).$client;
    await installWriteAudit(journal);
  });
  afterAll(async () => {
    await outage?.close();
  });

  it("the next delivery reaches the seat only after the first one's settle is recorded", async () => {
    const { lead, proxy, mailbox } = outage;
    expect((await lead.call("message_seat", { seat: "inbox", message: "warm" })).structuredContent).toMatchObject({
      outcome: "delivered",
    });
    // The primary goes as the first delivery's settle is sent: the message is in the seat, its outcome not on record.
    const down = proxy.downWhenClientSends("update operator_call_receipts set state");
    const first = await lead.call("message_seat", { seat: "inbox", message: "settle lost" });
    await down;
    expect(first.structuredContent).toMatchObject({ outcome: "uncertain" });
    const firstId = String(first.structuredContent!.deliveryId);
    // Down past the first retry of the settle (the retries run every second).
    await new Promise((r) => setTimeout(r, 1_300));
    proxy.up();
    // The journal is back (the promoted standby). The next message goes as soon as the seat's lease is
    // free: before, the lease was released apart within 250 ms, while the settle waited for its next retry.
    const leased = async () =>
      Number(
        (
          await journal<{ n: number }[]>`select count(*)::int as n from seat_turns where holder like ${`%:${firstId}`}`
        )[0]?.n,
      );
    await until(async () => (await leased()) === 0, "the first delivery's lease freed", 25);
    const second = await lead.call("message_seat", { seat: "inbox", message: "after the promotion" });
    expect(second.structuredContent).toMatchObject({ outcome: "delivered" });
    const state = async () =>
      (await journal<{ state: string }[]>`select state from delivery_receipts where id = ${firstId}`)[0]?.state;
    await until(async () => (await state()) === "delivered", "the lost settle recorded", 100);

    const arrivals = mailbox
      .list("inbox")
      .entries.map((e) => ({ seat: "inbox", deliveryId: e.deliveryId, atMs: e.receivedAtMs }));
    expect(arrivals.map((a) => a.deliveryId)).toContain(firstId);
    const overlaps = await seatOverlaps(journal, arrivals);
    expect(overlaps.examples).toEqual([]);
    expect(overlaps.max_in_flight_per_seat).toBe(1);
  }, 90_000);
});
