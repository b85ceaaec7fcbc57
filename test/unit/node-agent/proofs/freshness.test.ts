import { describe, expect, it } from "vitest";
import {
  judgeFreshness,
  passGate,
  FRESHNESS_LIMIT_MS,
  MAX_PROOF_ATTEMPTS,
  UNMEASURED_TRANSIT_BOUND_MS,
} from "../../../../node-agent/proofs/freshness.js";
import type { MonotonicClock, ProofFact } from "../../../../node-agent/proofs/proof.js";
import { VirtualClock } from "../../../kit/virtual-clock.js";

const clockAt = (ms: number): MonotonicClock => ({ nowMs: () => ms });
const proof = (kind: string, completedAtMs: number, outcome: ProofFact["outcome"] = "proven"): ProofFact => ({
  kind,
  outcome,
  detail: "",
  completedAtMs,
});

describe("freshness.judgeFreshness", () => {
  it("passes when the oldest proof is within 250 ms of the write (rule 26)", () => {
    const v = judgeFreshness(clockAt(1000), [proof("pane", 900), proof("process", 990)], {
      ageMs: 5,
      arrivedAtMs: 980,
    });
    expect(v.pass).toBe(true);
    expect(v.oldestKind).toBe("pane");
    expect(v.oldestAgeMs).toBe(100);
  });
  it("refuses when any proof is older than 250 ms: the oldest one counts, not the newest", () => {
    const v = judgeFreshness(clockAt(1000), [proof("pane", 1000 - FRESHNESS_LIMIT_MS - 1), proof("process", 999)], {
      ageMs: 0,
      arrivedAtMs: 1000,
    });
    expect(v.pass).toBe(false);
    expect(v.oldestKind).toBe("pane");
  });
  it("counts the controller's authority age plus the time since arrival and the transit bound", () => {
    const v = judgeFreshness(clockAt(1000), [proof("pane", 999)], { ageMs: 100, arrivedAtMs: 900 });
    expect(v.oldestKind).toBe("controller_authority");
    expect(v.oldestAgeMs).toBe(100 + UNMEASURED_TRANSIT_BOUND_MS + 100);
    expect(v.pass).toBe(true);
    const stale = judgeFreshness(clockAt(1200), [proof("pane", 1199)], { ageMs: 100, arrivedAtMs: 900 });
    expect(stale.pass).toBe(false);
  });
  it("never passes a proof that is unknown or refuted, however fresh", () => {
    expect(judgeFreshness(clockAt(1000), [proof("pane", 1000, "unknown")], { ageMs: 0, arrivedAtMs: 1000 }).pass).toBe(
      false,
    );
    expect(judgeFreshness(clockAt(1000), [proof("pane", 1000, "refuted")], { ageMs: 0, arrivedAtMs: 1000 }).pass).toBe(
      false,
    );
  });
});

/** A reader whose read takes `durations[i]` ms of virtual time on its i-th call and records when it started. */
function timedReader(clock: VirtualClock, kind: string, durations: number[]) {
  const starts: number[] = [];
  return {
    starts,
    reader: {
      name: kind,
      read: async (): Promise<ProofFact[]> => {
        starts.push(clock.nowMs());
        const d = durations[Math.min(starts.length - 1, durations.length - 1)]!;
        if (d > 0) await clock.wait(d);
        return [proof(kind, clock.nowMs())];
      },
    },
  };
}

describe("freshness.passGate", () => {
  it("reads that finish 300 ms apart are read again with the faster one started 300 ms later, then pass", async () => {
    const clock = new VirtualClock(1_000);
    const fast = timedReader(clock, "pane", [0]);
    const slow = timedReader(clock, "remote_part", [300]);
    const r = await clock.run(passGate({ clock, wait: clock.wait, readers: [fast.reader, slow.reader] }));
    expect(r.pass).toBe(true);
    expect(r.attempts).toBe(2);
    expect(fast.starts).toEqual([1_000, 1_600]);
    expect(slow.starts).toEqual([1_000, 1_300]);
    const v = judgeFreshness(clock, r.proofs, undefined);
    expect(v.oldestAgeMs).toBe(0);
  });

  it("refuses with a definite proof_stale after 3 attempts when the reads never line up", async () => {
    const clock = new VirtualClock(1_000);
    const fast = timedReader(clock, "pane", [0]);
    const slow = timedReader(clock, "remote_part", [300, 600, 900]);
    const r = await clock.run(passGate({ clock, wait: clock.wait, readers: [fast.reader, slow.reader] }));
    expect(r.pass).toBe(false);
    if (r.pass) return;
    expect(r.reason).toBe("proof_stale");
    expect(r.attempts).toBe(MAX_PROOF_ATTEMPTS);
    expect(slow.starts).toHaveLength(3);
    expect(r.detail).toContain("300 ms, 300 ms, 300 ms apart in 3 attempts");
  });

  it("a controller authority already stale on arrival is refused before any proof is read", async () => {
    const clock = new VirtualClock(1_000);
    const pane = timedReader(clock, "pane", [0]);
    const r = await clock.run(
      passGate({
        clock,
        wait: clock.wait,
        readers: [pane.reader],
        authority: { ageMs: FRESHNESS_LIMIT_MS, arrivedAtMs: 1_000 },
      }),
    );
    expect(r.pass).toBe(false);
    if (r.pass) return;
    expect(r.reason).toBe("proof_stale");
    expect(pane.starts).toEqual([]);
    expect(r.detail).toContain("controller's authority");
  });

  it("waiting never resets the clock: reads 300 ms apart under a controller authority are refused, not realigned", async () => {
    const clock = new VirtualClock(1_000);
    const fast = timedReader(clock, "pane", [0]);
    const slow = timedReader(clock, "remote_part", [300]);
    const r = await clock.run(
      passGate({
        clock,
        wait: clock.wait,
        readers: [fast.reader, slow.reader],
        authority: { ageMs: 2, arrivedAtMs: 1_000 },
      }),
    );
    expect(r.pass).toBe(false);
    if (r.pass) return;
    expect(r.reason).toBe("proof_stale");
    // The authority predates every local read, so it is the oldest proof; re-reading cannot help.
    expect(fast.starts).toEqual([1_000]);
    expect(r.proofs.map((p) => p.kind)).toEqual(["controller_authority", "pane", "remote_part"]);
  });

  it("a refuted or unknown proof is a definite refusal on the first read, however fresh", async () => {
    const clock = new VirtualClock(1_000);
    const unknown = { name: "home", read: async () => [proof("private_home", clock.nowMs(), "unknown")] };
    const r = await clock.run(
      passGate({ clock, wait: clock.wait, readers: [unknown], authority: { ageMs: 0, arrivedAtMs: 1_000 } }),
    );
    expect(r).toMatchObject({ pass: false, reason: "proof_unknown", attempts: 1 });
  });

  it("passes fresh proofs on the first read and lists the controller's authority among them", async () => {
    const clock = new VirtualClock(1_000);
    const pane = timedReader(clock, "pane", [5]);
    const r = await clock.run(
      passGate({ clock, wait: clock.wait, readers: [pane.reader], authority: { ageMs: 3, arrivedAtMs: 1_000 } }),
    );
    expect(r).toMatchObject({ pass: true, attempts: 1 });
    const v = judgeFreshness(clock, r.proofs, undefined);
    expect(v.oldestKind).toBe("controller_authority");
    expect(v.oldestAgeMs).toBe(3 + UNMEASURED_TRANSIT_BOUND_MS + 5);
  });
});
