/**
 * The journal's cost per delivery, counted on the wire of a real PostgreSQL (ADR 0013): a
 * relay in front of the server (test/fixtures/pg-wire-relay.ts) counts every round trip (each
 * ReadyForQuery) and every WAL-flushing commit (a transaction that wrote, ending idle) while
 * one message_seat goes through the controller to a real agent and a mailbox seat.
 * Target: at most 4 round trips and at most 2 WAL-flushing commits per delivery.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { startPgWireRelay, type PgWireRelay } from "../fixtures/pg-wire-relay.js";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe.runIf(process.env.DATABASE_URL)("the journal on the wire, per delivery (PostgreSQL)", () => {
  let fleet: TestFleet;
  let relay: PgWireRelay;
  let lead: LeadClient;

  beforeAll(async () => {
    const target = new URL(process.env.DATABASE_URL!);
    relay = await startPgWireRelay(target.hostname, Number(target.port || 5432));
    fleet = await startFleet(
      "postgres",
      { heartbeatIntervalMs: 60_000 },
      { databaseUrlVia: (url) => relay.urlFor(url) },
    );
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
    await relay?.close();
  });

  it("one delivered message_seat costs at most 4 round trips and at most 2 WAL-flushing commits", async () => {
    // Warm: each pooled connection prepares each statement once (a Parse/Describe round trip).
    for (let i = 0; i < 30; i++)
      expect(
        (await lead.call("message_seat", { seat: "inbox", message: `warm ${i}` })).structuredContent,
      ).toMatchObject({ outcome: "delivered" });
    const trips: number[] = [];
    const commits: number[] = [];
    const seen: string[][] = [];
    for (let i = 0; i < 20; i++) {
      relay.reset();
      const res = await lead.call("message_seat", { seat: "inbox", message: `counted ${i}` });
      expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
      // The settle is committed before the answer: nothing of this delivery is still on the wire.
      const c = relay.counts();
      trips.push(c.roundTrips);
      commits.push(c.walCommits);
      seen.push(c.statements);
    }
    const detail = JSON.stringify({ trips, commits, example: seen[0] });
    // The median: a heartbeat of the controller instance (every 5 s) may land inside one window.
    expect(median(trips), detail).toBeLessThanOrEqual(4);
    expect(median(commits), detail).toBeLessThanOrEqual(2);
    expect(Math.min(...trips), detail).toBeGreaterThanOrEqual(2);
    console.log(`journal per delivery: round trips ${detail}`);
  });

  it("issue 34 item 4: a busy seat on one replica costs no more round trips per delivery than a free one (the hand-off rides the settle)", async () => {
    // Four callers on one seat: every delivery but the first finds the seat busy and waits for its turn.
    const leads = await Promise.all(
      Array.from({ length: 4 }, () => connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken)),
    );
    try {
      const round = async (n: number, tag: string) =>
        Promise.all(
          leads.map(async (l, c) => {
            for (let i = 0; i < n; i++)
              expect(
                (await l.call("message_seat", { seat: "inbox", message: `${tag} ${c}.${i}` })).structuredContent,
              ).toMatchObject({ outcome: "delivered" });
          }),
        );
      await round(5, "busy warm");
      relay.reset();
      const t0 = performance.now();
      await round(25, "busy counted");
      const ms = performance.now() - t0;
      const c = relay.counts();
      const perDelivery = c.roundTrips / 100;
      const kinds = new Map<string, number>();
      for (const s of c.statements) {
        const k = /clankie:(\w+)/.exec(s)?.[1] ?? s.slice(0, 30);
        kinds.set(k, (kinds.get(k) ?? 0) + 1);
      }
      const detail = JSON.stringify({
        perDelivery,
        walCommits: c.walCommits / 100,
        deliveriesPerS: Math.round(100_000 / ms),
        kinds: Object.fromEntries(kinds),
      });
      console.log(`journal per delivery, one seat with 4 callers: ${detail}`);
      // admit + recheck (the seat was busy at admission) + settle, and the heartbeats of the window.
      expect(perDelivery, detail).toBeLessThanOrEqual(4);
      expect(c.walCommits / 100, detail).toBeLessThanOrEqual(2.2);
      // The turn passes inside the settle statement: no turn statement of its own on one replica. One poll
      // can happen under load: a settle whose snapshot predates a waiter's admission releases the lease, and
      // that waiter, queued behind it, claims the free lease with one poll (seen once in a full run).
      for (const k of ["join_turn", "pass_turn", "release_turn"]) expect(kinds.get(k) ?? 0, detail).toBe(0);
      expect(kinds.get("poll_turn") ?? 0, detail).toBeLessThanOrEqual(2);
      for (const k of ["admit", "settle", "recheck"]) expect(kinds.get(k) ?? 0, detail).toBeLessThanOrEqual(100);
    } finally {
      await Promise.all(leads.map((l) => l.close()));
    }
  });
});
