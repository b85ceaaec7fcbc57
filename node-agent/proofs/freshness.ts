/**
 * The freshness gate (ADR 0207, VUH-2779): a native write may follow the oldest final
 * proof by at most 250 ms, counted on one monotonic clock. The controller's authority
 * checks arrive with their age; the agent adds the time since the request arrived and a
 * conservative transit bound, so that age counts as one more proof.
 */
import type { ProofFact, MonotonicClock } from "./proof.js";

export const FRESHNESS_LIMIT_MS = 250;
/** Added to the controller's stated age for the request's time on the wire. */
export const TRANSIT_BOUND_MS = 10;

export interface AuthorityStamp {
  /** Age of the controller's checks when the request left it. */
  ageMs: number;
  /** When the request arrived, on the agent's monotonic clock. */
  arrivedAtMs: number;
}

export interface GateVerdict {
  pass: boolean;
  /** Age of the oldest proof (authority included) at this instant. */
  oldestAgeMs: number;
  oldestKind: string;
  ageByKind: Map<string, number>;
}

/** Judge at the instant of the call; the write must happen right after a pass. */
export function judgeFreshness(clock: MonotonicClock, proofs: ProofFact[], authority: AuthorityStamp, limitMs = FRESHNESS_LIMIT_MS): GateVerdict {
  const now = clock.nowMs();
  const ageByKind = new Map<string, number>();
  let oldestAgeMs = authority.ageMs + TRANSIT_BOUND_MS + (now - authority.arrivedAtMs);
  let oldestKind = "controller_authority";
  ageByKind.set(oldestKind, oldestAgeMs);
  for (const p of proofs) {
    const age = now - p.completedAtMs;
    ageByKind.set(p.kind, age);
    if (age > oldestAgeMs) {
      oldestAgeMs = age;
      oldestKind = p.kind;
    }
  }
  return { pass: oldestAgeMs <= limitMs && proofs.every((p) => p.outcome === "proven"), oldestAgeMs, oldestKind, ageByKind };
}
