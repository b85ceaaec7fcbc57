/** Sizes per mode: full (`npm run bench`, ≤ 10 min), quick (`-- --quick`, ≤ 2 min), tiny (smoke test only). */
import type { PeerConfig } from "./sections/peer.js";
import type { JournalConfig } from "./sections/journal.js";
import type { McpConfig } from "./sections/mcp.js";
import type { MemoryConfig } from "./sections/memory.js";

export type Mode = "full" | "quick" | "tiny";

export interface BenchConfig {
  mode: Mode;
  peer: PeerConfig;
  journal: JournalConfig;
  mcp: McpConfig;
  memory: MemoryConfig;
  /** Seats on the peer/journal agent: one per caller at the highest concurrency. */
  seats: number;
}

const ONE_WAY_MS = 25; // 50 ms round trip

export function configFor(mode: Mode): BenchConfig {
  switch (mode) {
    case "full":
      return {
        mode,
        seats: 16,
        peer: { n: 400, nRtt: 80, warmup: 30, oneWayMs: ONE_WAY_MS },
        journal: { callers: [1, 4, 16], secondsPerLevel: 8, rounds: 4 },
        mcp: { n: 500, warmup: 30 },
        memory: { receipts: 1_000_000, machines: 50, seatsPerMachine: 20, deliveries: 200, settleSeconds: 5 },
      };
    case "quick":
      return {
        mode,
        seats: 16,
        peer: { n: 60, nRtt: 12, warmup: 10, oneWayMs: ONE_WAY_MS },
        journal: { callers: [1, 4, 16], secondsPerLevel: 2, rounds: 2 },
        mcp: { n: 100, warmup: 10 },
        memory: { receipts: 100_000, machines: 50, seatsPerMachine: 20, deliveries: 50, settleSeconds: 2 },
      };
    case "tiny":
      return {
        mode,
        seats: 4,
        peer: { n: 4, nRtt: 2, warmup: 2, oneWayMs: ONE_WAY_MS },
        journal: { callers: [1, 4, 16], secondsPerLevel: 0.4, rounds: 1 },
        mcp: { n: 5, warmup: 2 },
        memory: { receipts: 2_000, machines: 2, seatsPerMachine: 5, deliveries: 3, settleSeconds: 0.5 },
      };
  }
}
