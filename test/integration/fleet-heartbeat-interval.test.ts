/**
 * Issue 36: a fleet's heartbeats stay cheap as it grows. The interval agents are told grows with
 * the fleet (Nomad's rule: max(base, machines / HEARTBEATS_PER_S)); rule 55 (a dead agent is
 * offline within 10 s) then rests on this replica's reverse link, whose pings cut a dead agent's
 * link; and a seat report writes only the seats that changed, in one statement.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { DRIVERS, openTestDatabase } from "../kit/test-db.js";
import type { Database } from "../../controller/db/open.js";
import { machines, seats } from "../../controller/db/schema.js";
import { GROWN_FLEET_BATCH_WINDOW_MS } from "../../controller/nodes/heartbeat-batch.js";
import {
  HEARTBEATS_PER_S,
  MAX_HEARTBEAT_INTERVAL_MS,
  Registry,
  heartbeatIntervalFor,
} from "../../controller/nodes/registry.js";
import {
  InputCapabilitiesSchema,
  SeatKind,
  SeatSchema,
  SeatStatus,
} from "../../shared/gen/clankie/fleet/v1/seat_pb.js";

const BASE = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("issue 36: the heartbeat interval grows with the fleet", () => {
  it("max(base, machines / HEARTBEATS_PER_S), capped: 2 s up to 20 agents, 10 s at 100, 100 s at 1,000", () => {
    expect(HEARTBEATS_PER_S).toBe(10);
    expect(heartbeatIntervalFor(BASE, 10)).toBe(2_000);
    expect(heartbeatIntervalFor(BASE, 20)).toBe(2_000);
    expect(heartbeatIntervalFor(BASE, 100)).toBe(10_000);
    expect(heartbeatIntervalFor(BASE, 1_000)).toBe(100_000);
    expect(heartbeatIntervalFor(BASE, 100_000)).toBe(MAX_HEARTBEAT_INTERVAL_MS);
  });
});

describe("issue 36: a small fleet keeps its base interval exactly (rule 55 by heartbeats alone)", () => {
  it("a fleet the base serves is told the base, not the base rounded up to whole seconds", () => {
    expect(heartbeatIntervalFor(500, 1)).toBe(500);
    expect(heartbeatIntervalFor(500, 5)).toBe(500);
    expect(heartbeatIntervalFor(500, 6)).toBe(1_000);
    expect(heartbeatIntervalFor(BASE, 21)).toBe(3_000);
  });
});

describe.each(DRIVERS)("issue 36: a growing fleet's liveness and seat reports (%s)", (driver) => {
  let database: Database;
  let cleanup: () => Promise<void>;
  let now = new Date();
  let registry: Registry;
  const linked = new Set<string>();
  beforeAll(async () => {
    ({ database, cleanup } = await openTestDatabase(driver));
    const row = (i: number) => ({
      name: `m${i}`,
      endpoint: "reverse://x",
      agentToken: "t",
      instanceId: `i${i}`,
      platform: "linux",
      capabilityVersion: 1,
      agentVersion: "0",
      lastSeenAt: now,
    });
    await database.db.insert(machines).values(Array.from({ length: 200 }, (_, i) => row(i)));
    registry = new Registry(database.db, BASE, () => now);
    registry.judgeLinks((m) => linked.has(m));
  });
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  it("200 machines are told a 20 s interval, in the heartbeat answer's field too", async () => {
    void registry.heartbeatIntervalMs; // the first read counts the fleet in the background
    for (let i = 0; i < 50 && registry.heartbeatIntervalMs === BASE; i++) await sleep(50);
    expect(registry.heartbeatIntervalMs).toBe(20_000);
    expect(registry.judgedIntervalMs).toBe(20_000);
  });

  it("a grown fleet's heartbeats wait up to a second to share one write (one statement a second, not three)", async () => {
    const t0 = performance.now();
    expect(await registry.periodicHeartbeat("m1", "i1")).toBe(true);
    // A timer never fires early: the window was the grown fleet's, not the base's 200 ms.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(GROWN_FLEET_BATCH_WINDOW_MS - 5);
  });

  it("rule 55 with a grown interval: a machine 7 s past its heartbeat is online while its link lives, offline the moment the link is gone", async () => {
    const m = { name: "m1", lastSeenAt: new Date(now.getTime() - 7_000) };
    linked.add("m1");
    expect(registry.isOnline(m)).toBe(true);
    linked.delete("m1"); // the link's pings went unanswered and it was cut (reverse-links.ts)
    expect(registry.isOnline(m)).toBe(false);
    // Within three base intervals a heartbeat alone is enough, as in a small fleet.
    expect(registry.isOnline({ name: "m1", lastSeenAt: new Date(now.getTime() - 5_000) })).toBe(true);
    // Past three grown intervals, not even a live link keeps it (the agent stopped heartbeating).
    linked.add("m1");
    expect(registry.isOnline({ name: "m1", lastSeenAt: new Date(now.getTime() - 65_000) })).toBe(false);
  });

  it("the health probe's question: some linked machine is online, in one statement whatever the names", async () => {
    linked.clear();
    expect(await registry.anyOnline([])).toBe(false);
    expect(await registry.anyOnline(["no-such-machine"])).toBe(false);
    const t0 = now.getTime();
    now = new Date(t0 + 7_000); // past three base intervals: online only while linked
    expect(await registry.anyOnline(["m5", "m6"])).toBe(false);
    linked.add("m6");
    expect(await registry.anyOnline(["m5", "m6"])).toBe(true);
    // Linked with a stale heartbeat among unlinked ones, and every name linked (the probe's case).
    expect(await registry.anyOnline(["m4", "m5", "m6", "no-such-machine"])).toBe(true);
    linked.add("m5");
    expect(await registry.anyOnline(["m5", "m6"])).toBe(true);
    linked.clear();
    now = new Date(t0 + 65_000); // past three grown intervals: not even a live link keeps them
    for (let i = 0; i < 200; i++) linked.add(`m${i}`);
    expect(await registry.anyOnline([...linked])).toBe(false);
    linked.clear();
    now = new Date(t0);
    expect(await registry.anyOnline(["m5"])).toBe(true); // a fresh heartbeat alone
  });

  it("a shrinking fleet keeps judging by the longer interval agents were told, for three of them", async () => {
    await database.db.delete(machines).where(eq(machines.name, "m199"));
    const t0 = now.getTime();
    now = new Date(t0 + 1_500); // past the count's throttle
    void registry.heartbeatIntervalMs;
    await sleep(200);
    expect(registry.judgedIntervalMs).toBe(20_000);
    now = new Date(t0);
  });

  it("a seat report writes only the seats that changed, in one statement", async () => {
    const seat = (name: string, status: SeatStatus) =>
      create(SeatSchema, {
        name,
        kind: SeatKind.MAILBOX,
        status,
        occupantId: "o",
        inputCapabilities: create(InputCapabilitiesSchema, {}),
      });
    const ten = Array.from({ length: 10 }, (_, i) => seat(`s${i}`, SeatStatus.IDLE));
    await registry.register({
      machine: "m2",
      endpoint: "reverse://m2",
      agentToken: "t",
      instanceId: "i2",
      platform: "linux",
      capabilityVersion: 1,
      agentVersion: "0",
      seats: ten,
    });
    const stamp = async () =>
      new Map(
        (await database.db.select().from(seats).where(eq(seats.machine, "m2"))).map((r) => [
          r.name,
          r.updatedAt.getTime(),
        ]),
      );
    const before = await stamp();
    expect(before.size).toBe(10);
    await sleep(20);
    let inserts = 0;
    const counted = new Proxy(database.db, {
      get(target, prop, receiver) {
        if (prop === "insert") inserts++;
        if (prop === "transaction")
          return (fn: (tx: unknown) => Promise<unknown>) =>
            target.transaction((tx) =>
              fn(new Proxy(tx, { get: (t, p, r) => (p === "insert" && inserts++, Reflect.get(t, p, r)) })),
            );
        return Reflect.get(target, prop, receiver);
      },
    });
    const reporter = new Registry(counted, BASE, () => new Date());
    const changed = [...ten];
    changed[3] = seat("s3", SeatStatus.WORKING);
    expect(await reporter.reportSeats("m2", "i2", changed)).toBe(true);
    expect(inserts).toBe(1);
    const after = await stamp();
    for (const [name, at] of after) {
      if (name === "s3") expect(at).toBeGreaterThan(before.get(name)!);
      else expect(at).toBe(before.get(name));
    }
  });
});
