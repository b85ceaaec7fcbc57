/** A proof is a typed fact stamped on the agent's monotonic clock when it completed. */
export type ProofOutcome = "proven" | "refuted" | "unknown";

export interface ProofFact {
  kind: string;
  outcome: ProofOutcome;
  detail: string;
  /** Monotonic milliseconds (performance.now()) at which the proof completed. */
  completedAtMs: number;
}

/** The monotonic clock proofs are stamped on. Injectable so gate tests need no sleeps. */
export interface MonotonicClock {
  nowMs(): number;
}

export const systemMonotonicClock: MonotonicClock = { nowMs: () => performance.now() };
