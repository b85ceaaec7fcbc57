/**
 * The journal under pressure (issue 11, part 2), on a real PostgreSQL: a table lock held by
 * another connection ends a send with a typed `journal_unavailable` while the lock is still
 * held (lock and statement timeouts; before, every send hung for the lock's 45 s), reads are
 * still answered while sends wait (their own pool), health is NOT_SERVING for `database`
 * while the journal cannot take a write, and no answer carries SQL, parameters or column
 * names (the NUL byte in `seat`), on PostgreSQL and PGlite.
 */
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus as Serving,
} from "../../shared/gen/grpc/health/v1/health_pb.js";
import { DRIVERS } from "../kit/test-db.js";
import { startFleet, type TestFleet } from "../kit/start-fleet.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { until } from "../kit/until.js";

const LEAKS =
  /select|insert|update|delete|"seats"|"machines"|"call_receipts"|"delivery_receipts"|params|\$1|"present"|failed query/i;

function healthOf(url: string) {
  return createClient(Health, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
}

describe.runIf(process.env.DATABASE_URL)("a table lock held by another PostgreSQL connection", () => {
  let fleet: TestFleet;
  let lead: LeadClient;
  let holder: postgres.Sql;
  let releaseLock: (() => void) | undefined;
  let lockHeld = false;

  /** Holds EXCLUSIVE on delivery_receipts (every write waits, reads do not) in an open transaction until released. */
  const holdLock = async (): Promise<void> => {
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = new URL(fleet.controller.database.location.replace("***", "x")).pathname;
    holder = postgres(url.toString(), { max: 1, onnotice: () => {} });
    const locked = new Promise<void>((resolveLocked) => {
      void holder
        .begin(async (sql) => {
          await sql`lock table delivery_receipts in exclusive mode`;
          lockHeld = true;
          resolveLocked();
          await new Promise<void>((r) => (releaseLock = r));
        })
        .finally(() => (lockHeld = false));
    });
    await locked;
  };

  beforeAll(async () => {
    fleet = await startFleet("postgres");
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    expect(
      (await lead.call("message_seat", { seat: "inbox", message: "before the lock" })).structuredContent,
    ).toMatchObject({ outcome: "delivered" });
  });
  afterAll(async () => {
    releaseLock?.();
    await holder?.end({ timeout: 5 });
    await lead?.close();
    await fleet?.close();
  });

  it("health is SERVING for database while the journal takes writes", async () => {
    const r = await healthOf(fleet.controller.url).check(create(HealthCheckRequestSchema, { service: "database" }));
    expect(r.status).toBe(Serving.SERVING);
  });

  it("while the lock is held: sends answer journal_unavailable (no hang), list_seats answers, health is NOT_SERVING", async () => {
    await holdLock();
    // More sends than the write pool has connections, all at once.
    const sends = Array.from({ length: 24 }, (_, i) =>
      lead.call("message_seat", { seat: "inbox", message: `during the lock ${i}` }),
    );
    const seats = await lead.call("list_seats", {});
    expect(seats.isError).toBeFalsy();
    expect(lockHeld).toBe(true);
    const results = await Promise.all(sends);
    // Every send answered while the lock was still held: none waited for the lock's release.
    expect(lockHeld).toBe(true);
    for (const r of results) {
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ reason: "journal_unavailable" });
      expect(JSON.stringify(r.structuredContent)).toMatch(/lock wait timed out|statement timed out/);
      // Issue 32 item 7: the kind in words, never the SQLSTATE.
      expect(JSON.stringify(r.structuredContent)).not.toMatch(/SQLSTATE/);
      expect(JSON.stringify(r.structuredContent)).not.toMatch(LEAKS);
    }
    // Health answers from its background probe (ADR 0034): NOT_SERVING from the first probe that met the lock.
    const health = healthOf(fleet.controller.url);
    const database = async () => (await health.check(create(HealthCheckRequestSchema, { service: "database" }))).status;
    await until(
      async () => (await database()) === Serving.NOT_SERVING,
      "health NOT_SERVING while the lock is held",
      80,
    );
    expect(lockHeld).toBe(true);
  });

  it("after the lock is released: health SERVING again and a send is delivered once", async () => {
    releaseLock?.();
    for (let i = 0; i < 50 && lockHeld; i++) await new Promise((r) => setTimeout(r, 50));
    const health = healthOf(fleet.controller.url);
    await until(
      async () =>
        (await health.check(create(HealthCheckRequestSchema, { service: "database" }))).status === Serving.SERVING,
      "health SERVING after the lock",
      80,
    );
    const r = await lead.call("message_seat", { seat: "inbox", message: "after the lock" });
    expect(r.structuredContent).toMatchObject({ outcome: "delivered" });
  });
});

describe.each(DRIVERS)("no SQL in any answer (%s)", (driver) => {
  let fleet: TestFleet;
  let lead: LeadClient;

  beforeAll(async () => {
    fleet = await startFleet(driver);
    await ownerOf(fleet.controller.url, fleet.controller.ownerToken).addMailbox("inbox");
    lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
  });
  afterAll(async () => {
    await lead?.close();
    await fleet?.close();
  });

  it("a NUL byte in seat is a typed refusal that names the problem and carries no SQL, parameters or column names", async () => {
    for (const [tool, args] of [
      ["message_seat", { seat: "in\u0000box", message: "hello" }],
      ["message_seat", { seat: "inbox", message: "nul \u0000 inside" }],
      ["stop_task", { seat: "in\u0000box" }],
    ] as const) {
      const r = await lead.call(tool, args);
      const text = JSON.stringify(r.structuredContent ?? r.content);
      expect(text, `${tool} ${JSON.stringify(args)}`).not.toMatch(LEAKS);
      if (r.isError) expect(r.structuredContent).toHaveProperty("reason");
    }
    // The NUL is the caller's input, not an outage: invalid_argument, and it says why.
    const r = await lead.call("message_seat", { seat: "in\u0000box", message: "hello" });
    expect(r.structuredContent).toMatchObject({ outcome: "invalid_argument", reason: "invalid_argument" });
    expect(String(r.structuredContent!.detail)).toMatch(/NUL/);
  });

  it("the owner's answers carry no SQL either", async () => {
    const owner = ownerOf(fleet.controller.url, fleet.controller.ownerToken);
    const err = await owner.addMailbox("in\u0000box").then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).not.toMatch(LEAKS);
  });
});
