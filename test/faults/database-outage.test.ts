/**
 * The journal's database going away and coming back, on a real PostgreSQL behind a TCP relay
 * that can take it down (test/fixtures/tcp-fault-proxy.ts): a message never leaves without its
 * receipt (fail closed, a typed error), the controller recovers without a restart, and a
 * database lost between the native write and the settle leaves one copy in the seat, an
 * uncertain answer, and a receipt that reconciliation settles from the session — never a resend.
 * A database that answers nothing at all meets the controller's answer deadline, in sends and reads.
 * PostgreSQL only: the embedded PGlite lives inside the controller and cannot go away alone.
 */
import { randomUUID } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MailboxStore } from "../../node-agent/mailbox/store.js";
import type { TestFleet } from "../kit/start-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import type { ownerOf } from "../kit/owner.js";
import type { PgWireRelay } from "../fixtures/pg-wire-relay.js";
import { startOutageFleet, type OutageFleet } from "../kit/outage-fleet.js";
import { HEALTH_PROBE_INTERVAL_MS, HEALTH_PROBE_TIMEOUT_MS } from "../../controller/health/health-monitor.js";
import { available } from "../kit/requirements.js";
import parsePrometheus from "parse-prometheus-text-format";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { IssueLeadTokenRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus as Serving,
} from "../../shared/gen/grpc/health/v1/health_pb.js";

const META = "clankie/seat-call";

describe.runIf(available("postgres"))("the journal's PostgreSQL going away", () => {
  let outage: OutageFleet;
  let fleet: TestFleet;
  let proxy: PgWireRelay;
  let lead: LeadClient;
  let mailbox: MailboxStore;
  let owner: ReturnType<typeof ownerOf>;
  const copies = (id: string) => mailbox.list("inbox").entries.filter((e) => e.deliveryId === id).length;

  beforeAll(async () => {
    outage = await startOutageFleet();
    ({ fleet, proxy, lead, owner, mailbox } = outage);
  });
  afterAll(async () => {
    await outage?.close();
  });

  it("database down before a call: a typed journal error, and nothing reaches the seat (fail closed)", async () => {
    const id = randomUUID();
    // The replica remembers a lead token for TOKEN_CACHE_MS (2 s): a call made after that, with the
    // journal down, is refused at the token check (503 journal_unavailable, nothing dispatched)
    // before it reaches admission. Warm the token first; if a stalled machine still outlived the
    // cache, that refusal is checked and the admission case tried again (it dispatched nothing).
    let res: Awaited<ReturnType<LeadClient["call"]>> | undefined;
    for (let attempt = 0; attempt < 3 && !res; attempt++) {
      proxy.up();
      for (let i = 0; i < 20; i++) {
        const warm = await lead.call("list_seats", {}).catch(() => undefined);
        if (warm && !warm.isError) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      proxy.down();
      res = await lead
        .call("message_seat", { seat: "inbox", message: "while the journal is down" }, { [META]: { deliveryId: id } })
        .catch((e: Error) => {
          expect(e.message).toMatch(/journal_unavailable: the token could not be checked.*nothing was dispatched/);
          expect(copies(id)).toBe(0);
          return undefined;
        });
    }
    expect(res).toBeDefined();
    res = res!;
    expect(res.isError).toBe(true);
    expect(JSON.stringify(res.structuredContent ?? res.content)).toMatch(
      /journal_unavailable|receipt journal could not be/,
    );
    expect(copies(id)).toBe(0);
    expect(mailbox.list("inbox").entries.some((e) => e.text === "while the journal is down")).toBe(false);
  });

  it("the database comes back: the same controller delivers again, once, without a restart", async () => {
    proxy.up();
    let res = await lead.call("message_seat", { seat: "inbox", message: "after the journal is back" });
    // The pool may still be discarding connections the outage killed: one more try is a new call, not a resend.
    for (let i = 0; i < 20 && res.isError; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await lead.call("message_seat", { seat: "inbox", message: `after the journal is back ${i}` });
    }
    expect(res.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(copies(res.structuredContent!.deliveryId as string)).toBe(1);
  });

  it("database lost after the receipt and before the agent call: a definite not-sent, recorded once the journal is back, and the text is not left fenced", async () => {
    const id = randomUUID();
    const text = "lost before the agent call";
    // The seat is busy at admission (another controller's lease), so the turn is polled for
    // after the receipt committed: the journal goes away at that poll, before any agent call.
    await fleet.controller.database.db.execute(
      sql`insert into seat_turns (seat_id, holder, expires_at) values ('testbox/inbox', 'another-controller:x', now() + interval '3 seconds')`,
    );
    const wentDown = proxy.downWhenClientSends("clankie:poll_turn");
    const res = await lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    await wentDown;
    expect(res.structuredContent).toMatchObject({
      outcome: "undelivered",
      reason: "journal_unavailable",
      deliveryId: id,
    });
    // The lead reads why in its own words, never the journal's SQL.
    expect(JSON.stringify(res.structuredContent)).not.toMatch(/insert into|seat_turns|clankie:/i);
    expect(copies(id)).toBe(0);

    proxy.up();
    // The controller records the not-sent outcome by itself: the receipt settles, and its id answers it.
    let receipt = (await owner.receipts()).find((r) => r.deliveryId === id);
    for (let i = 0; i < 50 && receipt?.state !== "not_sent"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    }
    expect(receipt?.state).toBe("not_sent");
    const again = await lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    expect(again.structuredContent).toMatchObject({ outcome: "undelivered", reason: "journal_unavailable" });
    expect(copies(id)).toBe(0);
    // The same text under a new id goes out: nothing unresolved fences it.
    const fresh = await lead.call("message_seat", { seat: "inbox", message: text });
    expect(fresh.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(copies(fresh.structuredContent!.deliveryId as string)).toBe(1);
  });

  it("database lost after the native write and before the settle: uncertain, one copy, never resent; reconcile settles it from the session", async () => {
    const id = randomUUID();
    const wentDown = proxy.downWhenClientSends("clankie:settle");
    const res = await lead.call(
      "message_seat",
      { seat: "inbox", message: "lost between write and settle" },
      { [META]: { deliveryId: id } },
    );
    await wentDown;
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({
      outcome: "uncertain",
      deliveryId: id,
      reconcileTool: "reconcile_seat_call",
    });
    expect(copies(id)).toBe(1);

    proxy.up();
    // The seat's lease, whose release failed with the settle, is given back once the journal
    // answers: the seat is not held for the rest of the lease by a delivery that is over.
    const leased = async () =>
      (
        (await fleet.controller.database.db.execute(
          sql`select holder from seat_turns where seat_id = 'testbox/inbox'`,
        )) as unknown as unknown[]
      ).length;
    let held = await leased().catch(() => 1);
    for (let i = 0; i < 25 && held; i++) {
      await new Promise((r) => setTimeout(r, 200));
      held = await leased().catch(() => 1);
    }
    expect(held, "a lease row for the seat 5 s after the journal came back").toBe(0);
    let again = await lead.call(
      "message_seat",
      { seat: "inbox", message: "lost between write and settle" },
      { [META]: { deliveryId: id } },
    );
    for (let i = 0; i < 20 && JSON.stringify(again.structuredContent ?? again.content).includes("journal"); i++) {
      await new Promise((r) => setTimeout(r, 250));
      again = await lead.call(
        "message_seat",
        { seat: "inbox", message: "lost between write and settle" },
        { [META]: { deliveryId: id } },
      );
    }
    // The same id again is never a second dispatch. Which answer it gets depends on whether the
    // controller has already recorded the agent's answer (it does so by itself once the journal is
    // back): still uncertain, or the settled original — delivered, with the same id. Either way one copy.
    const body = again.structuredContent as { outcome?: string; reason?: string; deliveryId?: string } | undefined;
    if (again.isError)
      expect([body?.outcome, body?.reason]).toSatisfy(
        ([o, r]: unknown[]) => o === "uncertain" || (o === "refused" && r === "receipt_in_use"),
      );
    else expect(body).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect(copies(id)).toBe(1);

    // The controller knew the agent's answer and records it once the journal is back.
    let receipt = (await owner.receipts()).find((r) => r.deliveryId === id);
    for (let i = 0; i < 50 && receipt?.state !== "delivered"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    }
    expect(receipt?.state).toBe("delivered");
    const reconciled = await lead.call("reconcile_seat_call", { deliveryId: id });
    expect(reconciled.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect(copies(id)).toBe(1);
  });

  it("a long outage: once the database is back the next call is served at once, not after the pool's reconnect backoff", async () => {
    // Every failed connect raises the pool's shared retry count; postgres.js's default backoff
    // grows with it to 10-20 s, so after a restart the controller sat out that delay with every
    // call queued (verify: calls stuck 11-16 s and lead timeouts at each database-restart).
    proxy.down();
    const until = performance.now() + 3_000;
    let refused = 0;
    while (performance.now() < until) {
      const res = await lead
        .call("message_seat", { seat: "inbox", message: `during the long outage ${refused}` })
        .catch((e: Error) => e);
      expect(JSON.stringify(res instanceof Error ? res.message : (res.structuredContent ?? res.content))).toMatch(
        /journal_unavailable|receipt journal could not be/,
      );
      refused++;
      await new Promise((r) => setTimeout(r, 100));
    }
    proxy.up();
    const back = performance.now();
    const res = await lead.call("message_seat", { seat: "inbox", message: "right after the long outage" });
    const waited = performance.now() - back;
    expect(res.structuredContent, `after ${refused} refused calls`).toMatchObject({ outcome: "delivered" });
    expect(copies(res.structuredContent!.deliveryId as string)).toBe(1);
    // The cap is 0.5 s a connection (controller/db/reconnect-backoff.ts); 5 s leaves room for a slow box.
    expect(waited, `after ${refused} refused calls`).toBeLessThan(5_000);
  });

  it("a database that answers nothing (stopped, or behind a link that drops every packet): journal_unavailable within the answer deadline, and an admission it commits later is settled not sent, never dispatched", async () => {
    const id = randomUUID();
    const text = "while the journal answers nothing";
    // A fresh token check, so the call reaches admission before the 2 s token cache runs out.
    expect((await lead.call("list_seats", {})).isError).toBeFalsy();
    proxy.freeze();
    const answerOf = (r: Awaited<ReturnType<LeadClient["call"]>> | Error) =>
      r instanceof Error ? r.message : JSON.stringify(r.structuredContent ?? r.content);
    let t0 = performance.now();
    const res = await lead
      .call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } })
      .catch((e: Error) => e);
    // The deadline is the statement timeout (5 s) + 2 s; before it, the call waited for the SDK's own 60 s timeout.
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(answerOf(res)).toMatch(/journal_unavailable.*did not answer.*nothing was dispatched/);
    // By now the token cache has run out: the token check meets the same deadline, and says so.
    t0 = performance.now();
    const refused = await lead.call("message_seat", { seat: "inbox", message: `${text} 2` }).catch((e: Error) => e);
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(answerOf(refused)).toMatch(/journal_unavailable: the token could not be checked/);
    expect(copies(id)).toBe(0);

    proxy.thaw();
    // What the frozen database held runs now, the admission among it: the controller settles it not sent.
    let receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    for (let i = 0; i < 50 && receipt?.state !== "not_sent"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    }
    expect(receipt?.state).toBe("not_sent");
    const again = await lead.call("message_seat", { seat: "inbox", message: text }, { [META]: { deliveryId: id } });
    expect(again.structuredContent).toMatchObject({
      outcome: "undelivered",
      reason: "journal_unavailable",
      deliveryId: id,
    });
    expect(copies(id)).toBe(0);
    // Nothing unresolved fences the text, and the seat is free: a new id goes out at once.
    const fresh = await lead.call("message_seat", { seat: "inbox", message: text });
    expect(fresh.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(copies(fresh.structuredContent!.deliveryId as string)).toBe(1);
  });

  it("a settle the database holds unanswered: uncertain at the settle's deadline, not after a second one for the lease; when it commits late, the next message to the seat goes out at once", async () => {
    const id = randomUUID();
    expect((await lead.call("list_seats", {})).isError).toBeFalsy();
    const frozen = proxy.freezeWhenClientSends("clankie:settle");
    const t0 = performance.now();
    const res = await lead.call(
      "message_seat",
      { seat: "inbox", message: "settle held unanswered" },
      { [META]: { deliveryId: id } },
    );
    await frozen;
    const answeredMs = performance.now() - t0;
    expect(res.structuredContent).toMatchObject({ outcome: "uncertain", deliveryId: id });
    expect(copies(id)).toBe(1);
    // The settle's deadline is 7 s; giving the seat's lease back waited for a second one (another 7 s).
    expect(answeredMs).toBeLessThan(10_000);
    proxy.thaw();
    // The held settle commits now, late; the seat is not held by it.
    const t1 = performance.now();
    let next = await lead.call("message_seat", { seat: "inbox", message: "after the late settle" });
    for (let i = 0; i < 20 && JSON.stringify(next.structuredContent ?? next.content).includes("journal"); i++) {
      await new Promise((r) => setTimeout(r, 250));
      next = await lead.call("message_seat", { seat: "inbox", message: "after the late settle" });
    }
    expect(next.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(performance.now() - t1).toBeLessThan(5_000);
    let receipt = (await owner.receipts()).find((r) => r.deliveryId === id);
    for (let i = 0; i < 50 && receipt?.state !== "delivered"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      receipt = (await owner.receipts().catch(() => [])).find((r) => r.deliveryId === id);
    }
    expect(receipt?.state).toBe("delivered");
    expect(copies(id)).toBe(1);
  });

  it("reads while the database answers nothing: list_seats, stop_task and the owner's status answer journal_unavailable within the answer deadline, and answer again once it is back", async () => {
    // A fresh token check, so the lead's read is not refused at the token check first.
    expect((await lead.call("list_seats", {})).isError).toBeFalsy();
    proxy.freeze();
    try {
      let t0 = performance.now();
      // Both within the token's 2 s cache, so neither is refused at the token check first.
      const [seats, stop] = await Promise.all([lead.call("list_seats", {}), lead.call("stop_task", { seat: "inbox" })]);
      // Before the deadline covered plain reads, this waited for the lead's own timeout (the SDK's 60 s).
      expect(performance.now() - t0).toBeLessThan(15_000);
      expect(seats.isError).toBe(true);
      expect(seats.structuredContent).toMatchObject({
        outcome: "unavailable",
        reason: "journal_unavailable",
        dispatched: false,
      });
      expect(String(seats.structuredContent!.detail)).toMatch(
        /could not be read \((the database sent no answer in time|CONNECT_TIMEOUT)/,
      );
      // stop_task reads the seat before anything is sent: the same typed refusal, never `internal`.
      expect(stop.structuredContent).toMatchObject({
        outcome: "unavailable",
        reason: "journal_unavailable",
        dispatched: false,
      });
      expect(String(stop.structuredContent!.detail)).toMatch(
        /so no stop was sent \((the database sent no answer in time|CONNECT_TIMEOUT)/,
      );
      t0 = performance.now();
      const status = await owner.seats().then(
        () => "answered",
        (e: Error) => e.message,
      );
      expect(performance.now() - t0).toBeLessThan(15_000);
      // A pooled connection meets the deadline; one the pool opens meets the connect timeout (5 s) first.
      expect(status).toMatch(
        /journal_unavailable: the receipt journal could not be read \((the database sent no answer in time|CONNECT_TIMEOUT)/,
      );
    } finally {
      proxy.thaw();
    }
    // The frozen reads were given up on; their late rows are dropped, and the pools serve again at once.
    const t0 = performance.now();
    expect((await lead.call("list_seats", {})).structuredContent).toMatchObject({
      seats: expect.arrayContaining([expect.objectContaining({ id: expect.stringMatching(/inbox$/) })]),
    });
    expect((await owner.seats()).length).toBeGreaterThan(0);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it("health while the database answers nothing: NOT_SERVING for database within the answer deadline (its background write probe hung), SERVING again once it is back", async () => {
    const health = createClient(Health, createConnectTransport({ baseUrl: fleet.controller.url, httpVersion: "1.1" }));
    const database = async () => (await health.check(create(HealthCheckRequestSchema, { service: "database" }))).status;
    const probe = async (path: string) => {
      const res = await fetch(new URL(path, fleet.controller.url));
      return [res.status, await res.json()] as const;
    };
    // Polled by the clock, not by a count of checks: each check's own time varies with the box's load.
    const until = async (want: Serving, ms: number) => {
      const t0 = performance.now();
      let status = await database();
      while (status !== want && performance.now() - t0 < ms) {
        await new Promise((r) => setTimeout(r, 100));
        status = await database();
      }
      return { status, elapsed: performance.now() - t0 };
    };
    // A failure says what the monitor last saw and how late this process's timers ran.
    const loop = monitorEventLoopDelay({ resolution: 20 });
    loop.enable();
    const why = async () =>
      JSON.stringify({ readyz: (await probe("/readyz"))[1], loopDelayMaxMs: Math.round(loop.max / 1e6) });
    try {
      // The cache may still hold the previous test's outage: wait for a probe that found the journal back.
      expect((await until(Serving.SERVING, 15_000)).status, await why()).toBe(Serving.SERVING);
      proxy.freeze();
      try {
        // Health answers from the background probe's cache (ADR 0034), so NOT_SERVING comes with the
        // first probe that starts after the freeze: at most an interval after the last one ended, and
        // that probe fails at its deadline (the answer deadline, or the probe's own timeout). Twice that
        // bound, for a loaded box; before the probe had a deadline, it hung until the caller gave up.
        const bound = 2 * (HEALTH_PROBE_INTERVAL_MS + HEALTH_PROBE_TIMEOUT_MS);
        const frozen = await until(Serving.NOT_SERVING, bound + 10_000);
        expect(frozen.status, await why()).toBe(Serving.NOT_SERVING);
        expect(frozen.elapsed, await why()).toBeLessThan(bound);
        // Issue 37 item 4: /healthz is liveness, no database work, so a live replica is not restarted for
        // its journal; /readyz is the same cache, 503, so a load balancer drains it, and it says why.
        expect(await probe("/healthz")).toEqual([200, { status: "ok" }]);
        const [code, ready] = await probe("/readyz");
        expect([code, ready.status, ready.components.database]).toEqual([503, "not_ready", "NOT_SERVING"]);
        expect(ready.databaseError).toMatch(
          /^(the journal cannot take a write \((the database sent no answer in time|CONNECT_TIMEOUT)|no answer within)/,
        );
      } finally {
        proxy.thaw();
      }
      expect((await until(Serving.SERVING, 15_000)).status, await why()).toBe(Serving.SERVING);
    } finally {
      loop.disable();
    }
  });

  it("the owner's writes while the database answers nothing: a join token and a lead token are refused journal_unavailable within the answer deadline, and issued again once it is back", async () => {
    const issueLead = () =>
      owner.owner.issueLeadToken(create(IssueLeadTokenRequestSchema, { conversationId: "outage-owner" }));
    expect((await owner.seats()).length).toBeGreaterThan(0);
    proxy.freeze();
    try {
      for (const write of [() => owner.enroll("outage-box"), issueLead]) {
        const t0 = performance.now();
        const answer = await write().then(
          () => "answered",
          (e: Error) => e.message,
        );
        // Before drizzle's writes and transactions had the deadline, these waited for the server (the CLI has no timeout of its own).
        expect(performance.now() - t0).toBeLessThan(15_000);
        expect(answer).toMatch(/journal_unavailable.*(the database sent no answer in time|CONNECT_TIMEOUT)/);
      }
    } finally {
      proxy.thaw();
    }
    let token = "";
    for (let i = 0; i < 25 && !token; i++) {
      token = await owner.enroll("outage-box").catch(() => "");
      if (!token) await new Promise((r) => setTimeout(r, 200));
    }
    expect(token).not.toBe("");
    expect((await issueLead()).token).not.toBe("");
  });

  it("the outages above are counted: clankie_journal_errors_total by stage (admit, settle) in /metrics", async () => {
    const res = await fetch(fleet.controller.metricsUrl, {
      headers: { authorization: `Bearer ${fleet.controller.ownerToken}` },
    });
    expect(res.status).toBe(200);
    const family = parsePrometheus(await res.text()).find((f) => f.name === "clankie_journal_errors_total")!;
    const at = (stage: string) => Number(family.metrics.find((m) => m.labels?.stage === stage)?.value ?? 0);
    expect(at("admit")).toBeGreaterThanOrEqual(1);
    expect(at("settle")).toBeGreaterThanOrEqual(1);
  });
});
