/**
 * The freshness gate inside the agent's delivery pipeline, on a real mailbox seat with an
 * injected clock: what is written, what is refused, and the evidence each result carries.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { deliver } from "../../../../node-agent/deliver/deliver.js";
import { MailboxAdapter } from "../../../../node-agent/harnesses/mailbox/adapter.js";
import { AdapterRegistry } from "../../../../node-agent/harnesses/registry.js";
import type { HarnessAdapter } from "../../../../node-agent/harnesses/adapter.js";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { SeatBook } from "../../../../node-agent/seats/seat-book.js";
import { FRESHNESS_LIMIT_MS, UNMEASURED_TRANSIT_BOUND_MS } from "../../../../node-agent/proofs/freshness.js";
import { SeatKind } from "../../../../shared/verdicts.js";
import { tempDir } from "../../../kit/test-db.js";
import { VirtualClock } from "../../../kit/virtual-clock.js";

/** A real mailbox seat whose inspect takes `inspectMs` of virtual time. */
function mailboxSeat(clock: VirtualClock, inspectMs = 0, cannotWork?: { reason: string; detail: string }) {
  const store = new MailboxStore(tempDir("gate-mbx"));
  const seats = new SeatBook(tempDir("gate-state"));
  const { seat } = seats.add("inbox", SeatKind.Mailbox, "inbox");
  store.create("inbox");
  const real = new MailboxAdapter(store, clock);
  const adapter: HarnessAdapter = {
    kind: real.kind,
    inspect: async (s) => {
      if (inspectMs > 0) await clock.wait(inspectMs);
      const r = await real.inspect(s);
      return cannotWork ? { ...r, snapshot: { ...r.snapshot, cannotWork } } : r;
    },
    write: (s, m) => real.write(s, m),
    readSession: (s, since) => real.readSession(s, since),
  };
  const deps = { seats, adapters: new AdapterRegistry().register(adapter), clock, wait: clock.wait };
  const command = (authorityAgeMs: number) => ({
    seatName: "inbox",
    deliveryId: randomUUID(),
    text: "run the tests",
    mode: "auto" as const,
    conversationId: "c",
    occupantId: seat.occupantId,
    authorityAgeMs,
    arrivedAtMs: clock.nowMs(),
  });
  return { store, deps, command };
}

describe("deliver.deliver freshness gate", () => {
  it("issue 35: the harness's own cannot-work refuses the write even when a slow inspect left the authority stale", async () => {
    const clock = new VirtualClock();
    const { store, deps, command } = mailboxSeat(clock, 300, { reason: "no_api_key", detail: "no key" });
    const v = await clock.run(deliver(deps, command(1)));
    expect(v).toMatchObject({ result: "rejected", reason: "seat_cannot_work" });
    expect(store.list("inbox").entries).toHaveLength(0);
  });

  it("issue 35: the harness's own cannot-work refuses the write when the authority arrived stale (the gate read nothing)", async () => {
    const clock = new VirtualClock();
    const { store, deps, command } = mailboxSeat(clock, 0, { reason: "no_api_key", detail: "no key" });
    const v = await clock.run(deliver(deps, command(FRESHNESS_LIMIT_MS + 1)));
    expect(v).toMatchObject({ result: "rejected", reason: "seat_cannot_work" });
    expect(store.list("inbox").entries).toHaveLength(0);
  });

  it("writes when the oldest proof is within 250 ms, and the result lists every proof with its age at the write", async () => {
    const clock = new VirtualClock();
    const { store, deps, command } = mailboxSeat(clock, 20);
    const v = await clock.run(deliver(deps, command(4)));
    expect(v.result).toBe("delivered");
    expect(v.proofs.map((p) => [p.kind, p.outcome, p.ageAtWriteMs])).toEqual([
      ["controller_authority", "proven", 4 + UNMEASURED_TRANSIT_BOUND_MS + 20],
      ["mailbox_present", "proven", 0],
    ]);
    expect(v.proofAgeMs).toBe(4 + UNMEASURED_TRANSIT_BOUND_MS + 20);
    expect(store.list("inbox").entries).toHaveLength(1);
  });

  it("a stale controller authority is a definite not-sent, and nothing reaches the mailbox", async () => {
    const clock = new VirtualClock();
    const { store, deps, command } = mailboxSeat(clock);
    const v = await clock.run(deliver(deps, command(FRESHNESS_LIMIT_MS)));
    expect(v).toMatchObject({ result: "not_sent", reason: "proof_stale" });
    expect(v.detail).toContain("controller's authority");
    expect(store.list("inbox").entries).toHaveLength(0);
  });

  it("a seat proof that takes 300 ms makes the authority stale: not sent, with the ages that refused it", async () => {
    const clock = new VirtualClock();
    const { store, deps, command } = mailboxSeat(clock, 300);
    const v = await clock.run(deliver(deps, command(1)));
    expect(v).toMatchObject({ result: "not_sent", reason: "proof_stale" });
    expect(v.proofs.find((p) => p.kind === "controller_authority")?.ageAtWriteMs).toBe(
      1 + UNMEASURED_TRANSIT_BOUND_MS + 300,
    );
    expect(v.proofAgeMs).toBe(1 + UNMEASURED_TRANSIT_BOUND_MS + 300);
    expect(store.list("inbox").entries).toHaveLength(0);
  });

  it("a refuted seat proof is a definite not-sent naming the proof", async () => {
    const clock = new VirtualClock();
    const { store, deps, command } = mailboxSeat(clock);
    rmSync(store.dir("inbox"), { recursive: true, force: true });
    const v = await clock.run(deliver(deps, command(0)));
    expect(v).toMatchObject({ result: "not_sent", reason: "proof_refuted" });
    expect(v.detail).toContain("mailbox_present");
  });
});
