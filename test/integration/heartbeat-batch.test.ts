/**
 * Issue 36: agents' heartbeats within one window share one UPDATE, and each heartbeat still
 * learns whether its (machine, instance) row is current (rule 55's liveness is unchanged: every
 * heartbeat moves its machine's last_seen_at; an unknown instance is told to register again).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS, openTestDatabase } from "../kit/test-db.js";
import type { Database } from "../../controller/db/open.js";
import { machines } from "../../controller/db/schema.js";
import { GROWN_FLEET_BATCH_WINDOW_MS, HeartbeatBatch } from "../../controller/nodes/heartbeat-batch.js";

describe.each(DRIVERS)("heartbeats written together (%s)", (driver) => {
  let database: Database;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ database, cleanup } = await openTestDatabase(driver));
    const old = new Date(Date.now() - 60_000);
    const row = (i: number) => ({
      name: `m${i}`,
      endpoint: "reverse://x",
      agentToken: "t",
      instanceId: `i${i}`,
      platform: "linux",
      capabilityVersion: 1,
      agentVersion: "0",
      lastSeenAt: old,
    });
    await database.db.insert(machines).values(Array.from({ length: 50 }, (_, i) => row(i)));
  });
  afterAll(async () => {
    await database?.close();
    await cleanup?.();
  });

  it("50 heartbeats in one window: one UPDATE, each answered with its own row's truth", async () => {
    let statements = 0;
    const counted = new Proxy(database.db, {
      get(target, prop, receiver) {
        if (prop === "update") statements++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const now = new Date();
    const batch = new HeartbeatBatch(counted, () => now, 100);
    const current = Array.from({ length: 40 }, (_, i) => batch.beat(`m${i}`, `i${i}`));
    // A stale instance of a known machine, and a machine never registered.
    const stale = batch.beat("m45", "old-instance");
    const unknown = batch.beat("nobody", "i0");
    expect(await Promise.all(current)).toEqual(Array(40).fill(true));
    expect(await stale).toBe(false);
    expect(await unknown).toBe(false);
    expect(statements).toBe(1);
    const rows = await database.db.select().from(machines);
    const seen = new Map(rows.map((r) => [r.name, r.lastSeenAt.getTime()]));
    for (let i = 0; i < 40; i++) expect(seen.get(`m${i}`)).toBe(now.getTime());
    expect(seen.get("m45")).toBeLessThan(now.getTime() - 30_000);
  });

  it("issue 36: the window is read for each batch, so a grown fleet's 1 s window gathers heartbeats 500 ms apart", async () => {
    let statements = 0;
    const counted = new Proxy(database.db, {
      get(target, prop, receiver) {
        if (prop === "update") statements++;
        return Reflect.get(target, prop, receiver);
      },
    });
    let windowMs = GROWN_FLEET_BATCH_WINDOW_MS;
    const batch = new HeartbeatBatch(
      counted,
      () => new Date(),
      () => windowMs,
    );
    const first = batch.beat("m1", "i1");
    await new Promise((r) => setTimeout(r, 500));
    expect(await Promise.all([first, batch.beat("m2", "i2")])).toEqual([true, true]);
    expect(statements).toBe(1);
    windowMs = 20; // the fleet shrank back to its base interval: the next batch waits as before
    const t0 = performance.now();
    expect(await batch.beat("m3", "i3")).toBe(true);
    expect(performance.now() - t0).toBeLessThan(GROWN_FLEET_BATCH_WINDOW_MS);
    expect(statements).toBe(2);
  });

  it("a database failure reaches every heartbeat of the batch as an error, not as 'unknown'", async () => {
    const failing = new Proxy(database.db, {
      get(target, prop, receiver) {
        if (prop === "update") throw new Error("journal unavailable");
        return Reflect.get(target, prop, receiver);
      },
    });
    const batch = new HeartbeatBatch(failing, () => new Date(), 20);
    await expect(Promise.all([batch.beat("m1", "i1"), batch.beat("m2", "i2")])).rejects.toThrow(/journal unavailable/);
  });
});
