/**
 * Agents' heartbeats, written to the journal together (issue 36). The fleet sends about
 * HEARTBEATS_PER_S of them whatever its size (registry.ts, ADR 0042), and at 2 s each they had
 * been 500 UPDATEs a second at 1,000 agents. Heartbeats that
 * arrive within one window share one UPDATE … RETURNING, and each still learns whether its
 * (machine, instance) row is current, so an agent told "unknown" registers again as before.
 * The window adds at most `windowMs` to a heartbeat's answer and nothing to a delivery.
 * Once the fleet's interval has grown, heartbeats come at HEARTBEATS_PER_S and a 200 ms window
 * held about one each: three statements a second, each ~1 ms of the controller's CPU with its
 * query building and answer (issue 36's idle profile). A second's window makes that one, and the
 * answer's extra wait is nothing against an interval of 3 s and more.
 */
import { and, eq, inArray, or, type SQL } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { machines } from "../db/schema.js";

export const HEARTBEAT_BATCH_WINDOW_MS = 200;
/** The window once the fleet's interval has grown past the base (registry.ts). */
export const GROWN_FLEET_BATCH_WINDOW_MS = 1_000;
/** A batch this large is written at once (a bound on the statement's size). */
const MAX_BATCH = 500;

interface Waiting {
  machine: string;
  instanceId: string;
  answer: (known: boolean) => void;
  fail: (e: unknown) => void;
}

export class HeartbeatBatch {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly now: () => Date,
    private readonly windowMs: number | (() => number) = HEARTBEAT_BATCH_WINDOW_MS,
  ) {}

  /** Records one heartbeat; false when this instance is not the machine's current one. */
  beat(machine: string, instanceId: string): Promise<boolean> {
    return new Promise((answer, fail) => {
      this.waiting.push({ machine, instanceId, answer, fail });
      if (this.waiting.length >= MAX_BATCH) this.flush();
      else
        this.timer ??= setTimeout(
          () => this.flush(),
          typeof this.windowMs === "number" ? this.windowMs : this.windowMs(),
        );
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    void this.write(batch);
  }

  private async write(batch: Waiting[]): Promise<void> {
    try {
      const byMachine = new Map<string, string[]>();
      for (const w of batch) byMachine.set(w.machine, [...(byMachine.get(w.machine) ?? []), w.instanceId]);
      const matches: SQL[] = [...byMachine].map(
        ([m, ids]) => and(eq(machines.name, m), inArray(machines.instanceId, ids))!,
      );
      const rows = await this.db
        .update(machines)
        .set({ lastSeenAt: this.now() })
        .where(or(...matches))
        .returning({ name: machines.name, instanceId: machines.instanceId });
      const current = new Set(rows.map((r) => `${r.name}\u0000${r.instanceId}`));
      for (const w of batch) w.answer(current.has(`${w.machine}\u0000${w.instanceId}`));
    } catch (e) {
      for (const w of batch) w.fail(e);
    }
  }
}
