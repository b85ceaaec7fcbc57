/** Sizes per mode: full (`npm run bench`, ≤ 10 min), quick (`-- --quick`, ≤ 2 min), tiny (smoke test only). */
import type { PeerConfig } from "./sections/peer.js";
import type { JournalConfig } from "./sections/journal.js";
import type { McpConfig } from "./sections/mcp.js";
import type { MemoryConfig } from "./sections/memory.js";
import type { ProofsConfig } from "./sections/proofs.js";
import type { LivenessConfig } from "./sections/liveness.js";
import type { UpMemoryConfig } from "./sections/up-memory.js";
import type { HaConfig } from "./sections/high-availability.js";

export type Mode = "full" | "quick" | "tiny";

export interface BenchConfig {
  mode: Mode;
  peer: PeerConfig;
  journal: JournalConfig;
  mcp: McpConfig;
  memory: MemoryConfig;
  proofs: ProofsConfig;
  liveness: LivenessConfig;
  upMemory: UpMemoryConfig;
  highAvailability: HaConfig;
  /** Seats on the peer/journal agent: one per caller at the highest concurrency. */
  seats: number;
}

const ONE_WAY_MS = 25; // 50 ms round trip
// The legacy SSH path's p50 at 50 ms RTT in the full runs so far (475.7-483.4 ms): the idle
// spell half the agent calls at 50 ms RTT come after, repeated on loopback (sections/peer.ts).
const SSH_AT_RTT50_MS = 475;

export function configFor(mode: Mode): BenchConfig {
  switch (mode) {
    case "full":
      return {
        mode,
        seats: 16,
        peer: { n: 250, nRtt: 50, warmup: 20, oneWayMs: ONE_WAY_MS, idleGapMs: SSH_AT_RTT50_MS },
        journal: { callers: [1, 4, 16], secondsPerLevel: 5, rounds: 3 },
        mcp: { n: 250, warmup: 20, pglite: true },
        memory: { receipts: 1_000_000, machines: 50, seatsPerMachine: 20, deliveries: 100, settleSeconds: 5 },
        proofs: { n: 1_000, warmup: 50, authorityAgeMs: 1 },
        liveness: { rounds: 3 },
        upMemory: { deliveries: 1_000, settleSeconds: 3 },
        highAvailability: { kills: 5, downMs: 3_000, pauseMs: 60_000, leads: 6, fairCallsEach: 25, settleMs: 10_000 },
      };
    case "quick":
      return {
        mode,
        seats: 16,
        peer: { n: 40, nRtt: 8, warmup: 6, oneWayMs: ONE_WAY_MS, idleGapMs: SSH_AT_RTT50_MS },
        journal: { callers: [1, 4, 16], secondsPerLevel: 1.2, rounds: 1 },
        // PostgreSQL only when it is here: a second `clankie up` on a fresh PGlite costs 10-20 s of initdb.
        mcp: { n: 50, warmup: 5, pglite: false },
        memory: { receipts: 50_000, machines: 50, seatsPerMachine: 20, deliveries: 20, settleSeconds: 1 },
        proofs: { n: 100, warmup: 10, authorityAgeMs: 1 },
        liveness: { rounds: 1 },
        upMemory: { deliveries: 1_000, settleSeconds: 1 },
        highAvailability: { kills: 2, downMs: 2_000, pauseMs: 15_000, leads: 4, fairCallsEach: 10, settleMs: 6_000 },
      };
    case "tiny":
      return {
        mode,
        seats: 4,
        peer: { n: 4, nRtt: 2, warmup: 2, oneWayMs: ONE_WAY_MS, idleGapMs: 20 },
        journal: { callers: [1, 4, 16], secondsPerLevel: 0.4, rounds: 1 },
        mcp: { n: 5, warmup: 2, pglite: false },
        memory: { receipts: 2_000, machines: 2, seatsPerMachine: 5, deliveries: 3, settleSeconds: 0.5 },
        proofs: { n: 20, warmup: 5, authorityAgeMs: 1 },
        liveness: { rounds: 1 },
        upMemory: { deliveries: 5, settleSeconds: 0.3 },
        highAvailability: { kills: 1, downMs: 1_000, pauseMs: 12_000, leads: 2, fairCallsEach: 3, settleMs: 3_000 },
      };
  }
}
