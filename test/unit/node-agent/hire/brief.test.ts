/**
 * Rule 52 / ADR 0213, the hire's brief (node-agent/hire/brief.ts): a seat whose first
 * probes answer slower than the 250 ms gate (a harness just started on a loaded machine)
 * still gets its brief exactly once, because a stale refusal wrote nothing and is tried
 * again after a pause; the hire's own authority carries no transit bound; an answer that
 * is not a stale refusal is never tried again; and the tries are bounded.
 */
import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { sendBrief, BRIEF_RETRY_PAUSES_MS } from "../../../../node-agent/hire/brief.js";
import { MailboxAdapter } from "../../../../node-agent/harnesses/mailbox/adapter.js";
import { AdapterRegistry } from "../../../../node-agent/harnesses/registry.js";
import type { HarnessAdapter } from "../../../../node-agent/harnesses/adapter.js";
import { MailboxStore } from "../../../../node-agent/mailbox/store.js";
import { SeatBook } from "../../../../node-agent/seats/seat-book.js";
import { SeatLocks } from "../../../../node-agent/seats/seat-locks.js";
import { SeatKind } from "../../../../shared/verdicts.js";
import { tempDir } from "../../../kit/test-db.js";
import { VirtualClock } from "../../../kit/virtual-clock.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A real mailbox seat whose n-th inspect takes `inspectMs(n)` of virtual time. */
function seatWithSlowStart(clock: VirtualClock, inspectMs: (n: number) => number, refuteFrom = Infinity) {
  const mbx = tempDir("brief-mbx");
  const state = tempDir("brief-state");
  dirs.push(mbx, state);
  const store = new MailboxStore(mbx);
  const seats = new SeatBook(state);
  const { seat } = seats.add("fresh", SeatKind.Mailbox, "fresh");
  store.create("fresh");
  const real = new MailboxAdapter(store, clock);
  let inspects = 0;
  const adapter: HarnessAdapter = {
    kind: real.kind,
    inspect: async (s) => {
      const n = ++inspects;
      await clock.wait(inspectMs(n));
      const seen = await real.inspect(s);
      if (n >= refuteFrom)
        return { ...seen, proofs: seen.proofs.map((p) => ({ ...p, outcome: "refuted" as const, detail: "gone" })) };
      return seen;
    },
    write: (s, m) => real.write(s, m),
    readSession: (s, since) => real.readSession(s, since),
  };
  const deps = {
    seats,
    adapters: new AdapterRegistry().register(adapter),
    clock,
    wait: clock.wait,
    locks: new SeatLocks(),
  };
  const req = {
    seatName: "fresh",
    deliveryId: "5d0f6a3e-1c2b-4a5d-8e9f-0a1b2c3d4e5f",
    text: "the brief",
    conversationId: "lead-a",
    occupantId: seat.occupantId,
  };
  return { store, deps, req, inspects: () => inspects };
}

describe("the hire's brief", () => {
  it("a seat whose first three probes take 300 ms gets the brief once, on the fourth attempt", async () => {
    const clock = new VirtualClock();
    const { store, deps, req, inspects } = seatWithSlowStart(clock, (n) => (n <= 3 ? 300 : 30));
    const v = await clock.run(sendBrief(deps, req));
    expect(v).toMatchObject({ result: "delivered", attempts: 4 });
    expect(inspects()).toBe(4);
    expect(store.list("fresh").entries.map((e) => e.text)).toEqual(["the brief"]);
  });

  it("the hire's own authority has no transit bound: a 240 ms probe passes the 250 ms gate", async () => {
    const clock = new VirtualClock();
    const { store, deps, req } = seatWithSlowStart(clock, () => 240);
    const v = await clock.run(sendBrief(deps, req));
    expect(v).toMatchObject({ result: "delivered", attempts: 1 });
    expect(v.proofs.find((p) => p.kind === "controller_authority")?.ageAtWriteMs).toBe(240);
    expect(store.list("fresh").entries).toHaveLength(1);
  });

  it("a seat that stays slow is refused proof_stale after a bounded number of attempts, and nothing is written", async () => {
    const clock = new VirtualClock();
    const { store, deps, req, inspects } = seatWithSlowStart(clock, () => 400);
    const started = clock.nowMs();
    const v = await clock.run(sendBrief(deps, req));
    expect(v).toMatchObject({ result: "not_sent", reason: "proof_stale", attempts: BRIEF_RETRY_PAUSES_MS.length + 1 });
    expect(inspects()).toBe(BRIEF_RETRY_PAUSES_MS.length + 1);
    const paused = BRIEF_RETRY_PAUSES_MS.reduce((a, b) => a + b, 0);
    expect(clock.nowMs() - started).toBe(paused + 400 * inspects());
    expect(store.list("fresh").entries).toHaveLength(0);
  });

  it("a refuted proof after a stale one is final: no further attempt", async () => {
    const clock = new VirtualClock();
    const { store, deps, req, inspects } = seatWithSlowStart(clock, (n) => (n === 1 ? 300 : 10), 2);
    const v = await clock.run(sendBrief(deps, req));
    expect(v).toMatchObject({ result: "not_sent", reason: "proof_refuted", attempts: 2 });
    expect(inspects()).toBe(2);
    expect(store.list("fresh").entries).toHaveLength(0);
  });
});
