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
    fleet = await startFleet("postgres", { heartbeatIntervalMs: 60_000 }, { databaseUrlVia: (url) => relay.urlFor(url) });
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
    for (let i = 0; i < 30; i++) expect((await lead.call("message_seat", { seat: "inbox", message: `warm ${i}` })).structuredContent).toMatchObject({ outcome: "delivered" });
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
});
