/**
 * The freshness gate (ADR 0207, VUH-2779): a native write may follow the oldest final
 * proof by at most 250 ms, counted on one monotonic clock. The controller's authority
 * checks arrive with their age; the agent adds the time since the request arrived and a
 * conservative transit bound, so that age counts as one more proof, and no wait makes it
 * younger. Proof reads that finish too far apart are read again with the faster ones
 * started later by the measured gap, up to three times; otherwise the gate refuses.
 */
import type { ProofFact, MonotonicClock } from "./proof.js";

export const FRESHNESS_LIMIT_MS = 250;
/** Added to the controller's stated age when the request carries no measured transit bound. */
export const UNMEASURED_TRANSIT_BOUND_MS = 50;
/** Proofs are read at most this many times for one write. */
export const MAX_PROOF_ATTEMPTS = 3;
export const AUTHORITY_KIND = "controller_authority";

export interface AuthorityStamp {
  /** Age of the controller's checks when the request left it. */
  ageMs: number;
  /** When the request arrived, on the agent's monotonic clock. */
  arrivedAtMs: number;
  /** Bound on the request's time on the wire: the link's measured worst recent round trip (link-round-trips.ts). */
  transitBoundMs?: number | undefined;
}

export const transitBoundOf = (authority: AuthorityStamp): number =>
  authority.transitBoundMs ?? UNMEASURED_TRANSIT_BOUND_MS;

export interface GateVerdict {
  pass: boolean;
  /** Age of the oldest proof (authority included) at this instant. */
  oldestAgeMs: number;
  oldestKind: string;
  ageByKind: Map<string, number>;
}

export function authorityAgeMs(now: number, authority: AuthorityStamp): number {
  return authority.ageMs + transitBoundOf(authority) + (now - authority.arrivedAtMs);
}

/** Judge at the instant of the call; the write must happen right after a pass. */
export function judgeFreshness(
  clock: MonotonicClock,
  proofs: ProofFact[],
  authority: AuthorityStamp | undefined,
  limitMs = FRESHNESS_LIMIT_MS,
): GateVerdict {
  const now = clock.nowMs();
  const ageByKind = new Map<string, number>();
  let oldestAgeMs = -Infinity;
  let oldestKind = "";
  if (authority) {
    oldestAgeMs = authorityAgeMs(now, authority);
    oldestKind = AUTHORITY_KIND;
    ageByKind.set(oldestKind, oldestAgeMs);
  }
  for (const p of proofs) {
    const age = now - p.completedAtMs;
    ageByKind.set(p.kind, Math.max(age, ageByKind.get(p.kind) ?? -Infinity));
    if (age > oldestAgeMs) {
      oldestAgeMs = age;
      oldestKind = p.kind;
    }
  }
  if (oldestAgeMs === -Infinity) oldestAgeMs = 0;
  return {
    pass: oldestAgeMs <= limitMs && proofs.every((p) => p.outcome === "proven"),
    oldestAgeMs,
    oldestKind,
    ageByKind,
  };
}

/** One independently re-readable source of final proofs (an adapter's inspect, a pane proof). */
export interface ProofReader {
  name: string;
  read(): Promise<ProofFact[]>;
}

export interface GateInput {
  clock: MonotonicClock;
  /** Waits on the same clock; injectable so gate tests need no sleeps. */
  wait: (ms: number) => Promise<void>;
  readers: ProofReader[];
  /** The controller's stamp; absent only for a check the agent authorises itself. */
  authority?: AuthorityStamp | undefined;
  limitMs?: number;
  maxAttempts?: number;
}

export type GateRefusal = "proof_refuted" | "proof_unknown" | "proof_stale";

export type GateResult =
  | { pass: true; proofs: ProofFact[]; attempts: number; detail: string }
  | { pass: false; reason: GateRefusal; proofs: ProofFact[]; attempts: number; detail: string };

interface ReadRun {
  startedAtMs: number;
  finishedAtMs: number;
  proofs: ProofFact[];
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The authority as a proof, so evidence lists it beside the local ones. */
export function authorityProof(authority: AuthorityStamp): ProofFact {
  return {
    kind: AUTHORITY_KIND,
    outcome: "proven",
    detail: `checked by the controller ${authority.ageMs} ms before sending, + ${transitBoundOf(authority)} ms transit bound (${authority.transitBoundMs === undefined ? "link not measured yet" : "the link's worst recent round trip"})`,
    completedAtMs: authority.arrivedAtMs - authority.ageMs - transitBoundOf(authority),
  };
}

/**
 * Read every proof, realigning reads that finish too far apart, and pass only when the
 * oldest proof is within the limit at this instant. The caller writes right after a pass.
 */
export async function passGate(input: GateInput): Promise<GateResult> {
  const { clock, readers, authority } = input;
  const limitMs = input.limitMs ?? FRESHNESS_LIMIT_MS;
  const maxAttempts = input.maxAttempts ?? MAX_PROOF_ATTEMPTS;
  const fixed = authority ? [authorityProof(authority)] : [];
  let delays = readers.map(() => 0);
  let last: ProofFact[] = fixed;
  const gaps: number[] = [];
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    // Waiting never makes the controller's authority younger: refuse before reading again.
    if (authority && authorityAgeMs(clock.nowMs(), authority) > limitMs) {
      const age = Math.round(authorityAgeMs(clock.nowMs(), authority));
      return {
        pass: false,
        reason: "proof_stale",
        proofs: last,
        attempts: attempt - 1,
        detail: `the controller's authority is ${age} ms old, over the ${limitMs} ms limit; no wait can make it younger`,
      };
    }
    const runs: ReadRun[] = await Promise.all(
      readers.map(async (r, i) => {
        if (delays[i]! > 0) await input.wait(delays[i]!);
        const startedAtMs = clock.nowMs();
        const proofs = await r.read();
        return { startedAtMs, finishedAtMs: clock.nowMs(), proofs };
      }),
    );
    last = [...fixed, ...runs.flatMap((r) => r.proofs)];
    const bad = last.find((p) => p.outcome !== "proven");
    if (bad) {
      return {
        pass: false,
        reason: bad.outcome === "refuted" ? "proof_refuted" : "proof_unknown",
        proofs: last,
        attempts: attempt,
        detail: `${bad.kind}: ${bad.detail}`,
      };
    }
    const v = judgeFreshness(clock, last, undefined, limitMs);
    if (v.pass) {
      const realigned = gaps.length
        ? `, after realigning reads ${gaps.map((g) => `${Math.round(g)} ms`).join(", ")} apart`
        : "";
      return {
        pass: true,
        proofs: last,
        attempts: attempt,
        detail: `oldest proof ${v.oldestKind} ${Math.round(v.oldestAgeMs)} ms old${realigned}`,
      };
    }
    if (v.oldestKind === AUTHORITY_KIND) {
      return {
        pass: false,
        reason: "proof_stale",
        proofs: last,
        attempts: attempt,
        detail: `the controller's authority is ${Math.round(v.oldestAgeMs)} ms old, over the ${limitMs} ms limit; no wait can make it younger`,
      };
    }
    // Start each faster read later by how much sooner it finished than the slowest one.
    const durations = runs.map((r) => r.finishedAtMs - r.startedAtMs);
    const slowest = Math.max(...durations);
    const finishes = runs.map((r) => r.finishedAtMs);
    gaps.push(Math.max(...finishes) - Math.min(...finishes));
    delays = durations.map((d) => slowest - d);
  }
  const v = judgeFreshness(clock, last, undefined, limitMs);
  return {
    pass: false,
    reason: "proof_stale",
    proofs: last,
    attempts: maxAttempts,
    detail: `the oldest proof (${v.oldestKind}) was ${Math.round(v.oldestAgeMs)} ms old at the gate, over the ${limitMs} ms limit; reads finished ${gaps.map((g) => `${Math.round(g)} ms`).join(", ")} apart in ${maxAttempts} attempts`,
  };
}
