import { describe, expect, it } from "vitest";
import { judgeFreshness, FRESHNESS_LIMIT_MS, TRANSIT_BOUND_MS } from "../../../../node-agent/proofs/freshness.js";
import type { MonotonicClock, ProofFact } from "../../../../node-agent/proofs/proof.js";

const clockAt = (ms: number): MonotonicClock => ({ nowMs: () => ms });
const proof = (kind: string, completedAtMs: number, outcome: ProofFact["outcome"] = "proven"): ProofFact => ({ kind, outcome, detail: "", completedAtMs });

describe("freshness.judgeFreshness", () => {
  it("passes when the oldest proof is within 250 ms of the write (rule 26)", () => {
    const v = judgeFreshness(clockAt(1000), [proof("pane", 900), proof("process", 990)], { ageMs: 5, arrivedAtMs: 980 });
    expect(v.pass).toBe(true);
    expect(v.oldestKind).toBe("pane");
    expect(v.oldestAgeMs).toBe(100);
  });
  it("refuses when any proof is older than 250 ms: the oldest one counts, not the newest", () => {
    const v = judgeFreshness(clockAt(1000), [proof("pane", 1000 - FRESHNESS_LIMIT_MS - 1), proof("process", 999)], { ageMs: 0, arrivedAtMs: 1000 });
    expect(v.pass).toBe(false);
    expect(v.oldestKind).toBe("pane");
  });
  it("counts the controller's authority age plus the time since arrival and the transit bound", () => {
    const v = judgeFreshness(clockAt(1000), [proof("pane", 999)], { ageMs: 100, arrivedAtMs: 900 });
    expect(v.oldestKind).toBe("controller_authority");
    expect(v.oldestAgeMs).toBe(100 + TRANSIT_BOUND_MS + 100);
    expect(v.pass).toBe(true);
    const stale = judgeFreshness(clockAt(1200), [proof("pane", 1199)], { ageMs: 100, arrivedAtMs: 900 });
    expect(stale.pass).toBe(false);
  });
  it("never passes a proof that is unknown or refuted, however fresh", () => {
    expect(judgeFreshness(clockAt(1000), [proof("pane", 1000, "unknown")], { ageMs: 0, arrivedAtMs: 1000 }).pass).toBe(false);
    expect(judgeFreshness(clockAt(1000), [proof("pane", 1000, "refuted")], { ageMs: 0, arrivedAtMs: 1000 }).pass).toBe(false);
  });
});
