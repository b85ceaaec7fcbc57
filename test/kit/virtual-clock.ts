/**
 * A virtual monotonic clock for gate tests: `wait(ms)` registers a timer, and `run(task)`
 * drives the task to completion by jumping time to the next timer whenever the task has
 * nothing else ready to run (real I/O in flight is waited for; virtual time stands still). Concurrent waits interleave exactly as they would in real time,
 * with no real sleeping and no timing in the assertions.
 */
import type { MonotonicClock } from "../../node-agent/proofs/proof.js";

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
}

export class VirtualClock implements MonotonicClock {
  private now = 0;
  private seq = 0;
  private timers: Timer[] = [];

  constructor(startMs = 1_000) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  readonly wait = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      this.timers.push({ at: this.now + Math.max(0, ms), seq: this.seq++, resolve });
    });

  /** Runs `task`, advancing time to each pending timer in order once the task is idle. */
  async run<T>(task: Promise<T>): Promise<T> {
    let settled = false;
    const done = task.finally(() => {
      settled = true;
    });
    for (;;) {
      // Let every ready continuation run before deciding time must move.
      await new Promise((r) => setImmediate(r));
      if (settled) return done;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (!next) {
        // Real I/O (a mailbox write) is in flight: let it finish; virtual time stands still.
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      this.now = Math.max(this.now, next.at);
      next.resolve();
    }
  }
}
