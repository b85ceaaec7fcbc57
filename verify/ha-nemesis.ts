/**
 * The HA run's faults (issue 34 item 6), on the topology of ha-cluster.ts. Each strikes one replica
 * in turn (the victim rotates) and heals:
 * - kill-replica: SIGKILL it, restart it later on the same ports, state dir and journal.
 * - pause-replica: SIGSTOP it past its lease (~10 s) for `pauseMs`, then SIGCONT; the window is kept
 *   for the paused-writes check (ha-checks.ts).
 * - partition-replica: cut it from every agent at its relay (its advertised agent URL, and the
 *   balancer's agent backend for it); the leads still reach it.
 * - promote-standby: SIGKILL the PostgreSQL primary, `pg_ctl promote` the standby; the run's last strike.
 */
import type { HaCluster } from "./ha-cluster.js";
import type { PauseWindow } from "./ha-checks.js";

export const HA_NEMESES = ["kill-replica", "pause-replica", "partition-replica", "promote-standby"] as const;
export type HaNemesisName = (typeof HA_NEMESES)[number];
/** One round; the run repeats it and ends with promote-standby (pg-pair.ts makes no second standby). */
export const HA_SCHEDULE: readonly HaNemesisName[] = [
  "kill-replica",
  "pause-replica",
  "partition-replica",
  "kill-replica",
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface HaStrike {
  victim?: number;
  pause?: PauseWindow;
  promotedAt?: number;
}

export async function applyHaNemesis(
  name: HaNemesisName,
  c: HaCluster,
  strike: number,
  o: { downMs: number; pauseMs: number; log: (l: string) => void },
): Promise<HaStrike> {
  const victim = strike % c.replicas.length;
  const r = c.replicas[victim]!;
  switch (name) {
    case "kill-replica":
      await r.process.kill();
      await sleep(o.downMs);
      await r.process.start();
      return { victim };
    case "pause-replica": {
      const pausedAt = new Date();
      r.process.pause();
      try {
        await sleep(o.pauseMs);
      } finally {
        r.process.resume();
      }
      return { victim, pause: { role: `replica${victim + 1}`, pausedAt, resumedAt: new Date() } };
    }
    case "partition-replica":
      await r.relay.down();
      try {
        await sleep(o.downMs * 2);
      } finally {
        await r.relay.up();
      }
      return { victim };
    case "promote-standby": {
      const { promotedAt } = await c.pg.failover();
      // Past the leads' answer deadline, so calls across the failover are counted in its window.
      await sleep(o.downMs * 3);
      return { promotedAt };
    }
  }
}
