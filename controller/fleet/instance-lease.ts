/**
 * This instance's lease (ADR 0036): registered with a new epoch at start, renewed every `renewMs`,
 * and judged expired by the database's clock. Between renewals the process trusts its lease only
 * until `leaseMs` after the last renewal was SENT (the database set the expiry later than that),
 * measured on the monotonic clock, which keeps running through a SIGSTOP: a process that wakes
 * from a pause finds its lease untrusted before it sends anything. A renewal the database refuses
 * means the lease was lost: the instance stops serving deliveries, says so loudly, re-registers
 * with a new epoch, gives up what its old epoch held, and only then serves again.
 */
import type { Logger } from "../../shared/logger.js";
import { ErrorCode, FleetError } from "../../shared/errors.js";
import type { Db } from "../db/open.js";
import {
  type InstanceEpoch,
  recoverOrphans,
  registerInstance,
  releaseOwnSeatLeases,
  removeInstance,
  renewLease,
} from "../journal/instances.js";

export interface InstanceLeaseOptions {
  db: Db;
  id: string;
  pid: number;
  host: string;
  leaseMs: number;
  renewMs: number;
  /** The embedded database: one process, so every other instance is dead. */
  onlyLiveIsSelf: boolean;
  logger: Logger;
  now: () => Date;
}

export class InstanceLease {
  private current = 0;
  /** `performance.now()` until which the lease is surely unexpired by the database's clock. */
  private trustedUntil = 0;
  private serving = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;
  /** The epoch lost, until what it held has been given up. */
  private stale: number | undefined;
  /** An epoch an agent fenced (ADR 0043): the next renewal gives it up instead. */
  private agentFenced: number | undefined;

  private constructor(private readonly o: InstanceLeaseOptions) {}

  /** Registers the instance with a new epoch; the caller starts renewals once it has recovered orphans. */
  static async acquire(o: InstanceLeaseOptions): Promise<InstanceLease> {
    const lease = new InstanceLease(o);
    await lease.register();
    return lease;
  }

  get id(): string {
    return this.o.id;
  }

  get epoch(): number {
    return this.current;
  }

  /** The (instance, epoch) every write for a delivery carries. */
  fence(): InstanceEpoch {
    return { instance: this.o.id, epoch: this.current };
  }

  /**
   * True while this instance may act for work begun under `epoch`: it is serving, that epoch is
   * still its own, and its lease is surely live. Checked just before a native write is sent.
   */
  holds(epoch = this.current): boolean {
    return this.serving && epoch === this.current && performance.now() < this.trustedUntil;
  }

  /**
   * An agent refused `epoch` because a peer had it fenced there to take this replica's seat turns over
   * (ADR 0043): the fleet has given that epoch up, so this replica gives it up too, as a lost lease.
   */
  fencedByAgent(epoch: number): void {
    if (epoch !== this.current || this.closed) return;
    this.serving = false;
    this.agentFenced = epoch;
    void this.tick();
  }

  /** Serving deliveries: false from a lost lease until the new epoch is registered and the old one's work given up. */
  isServing(): boolean {
    return this.serving;
  }

  /** Starts serving and renewing; called once boot recovery is done. */
  start(): void {
    if (this.timer || this.closed) return;
    this.serving = true;
    this.timer = setInterval(() => void this.tick(), this.o.renewMs);
    this.timer.unref();
  }

  /** One renewal (and, on PostgreSQL, one takeover pass over peers whose lease expired). */
  tick(): Promise<void> {
    if (!this.ticking) this.ticking = this.renewOnce().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking?.catch(() => {});
    this.serving = false;
    await removeInstance(this.o.db, this.fence()).catch(() => {});
  }

  private async register(): Promise<void> {
    const sentAt = performance.now();
    this.current = await registerInstance(this.o.db, this.o.id, this.o.pid, this.o.host, this.o.leaseMs);
    this.trustedUntil = sentAt + this.trusted();
  }

  /** The lease less a margin for the two clocks' rates: never trusted up to its last millisecond. */
  private trusted(): number {
    return this.o.leaseMs - Math.min(1_000, this.o.leaseMs / 10);
  }

  private async renewOnce(): Promise<void> {
    const { db, logger } = this.o;
    const sentAt = performance.now();
    let due = true;
    try {
      if (this.agentFenced === this.current) {
        this.agentFenced = undefined;
        await this.lose("an agent refused its epoch: a peer took its seat turns over");
      } else {
        const r = await renewLease(db, this.fence(), this.o.leaseMs);
        if (r.renewed) this.trustedUntil = sentAt + this.trusted();
        else await this.lose();
        due = r.takeoverDue;
      }
      // What an old epoch held is given up before anything is served under the new one.
      if (this.stale !== undefined) await this.giveUp(this.stale);
    } catch (e) {
      // Not renewed is not lost: the lease stays trusted until its time runs out, then deliveries are refused.
      logger.warn("instance lease renewal failed", { epoch: this.current, error: (e as Error).message });
      return;
    }
    if (this.closed) return;
    this.serving = true;
    // A lost lease was re-acquired above and its takeover done there; otherwise only when the renewal saw work.
    if (this.o.onlyLiveIsSelf || !due) return;
    const ids = await recoverOrphans(db, this.fence(), false, this.o.now()).catch((e: Error) => {
      logger.warn("takeover pass failed", { error: e.message });
      return [];
    });
    if (ids.length)
      logger.warn("calls in flight on a replica whose lease expired are now uncertain; none was replayed", {
        deliveryIds: ids,
      });
  }

  private async lose(why = "its renewal found it expired"): Promise<void> {
    this.serving = false;
    this.stale ??= this.current;
    this.o.logger.error(
      "INSTANCE LEASE LOST: this replica stops serving deliveries until it re-registers; peers may have taken over its in-flight calls and seat leases, and every write of its old epoch is refused",
      { instance: this.o.id, epoch: this.current, why },
    );
    await this.register();
  }

  private async giveUp(lost: number): Promise<void> {
    await releaseOwnSeatLeases(this.o.db, this.o.id);
    const ids = await recoverOrphans(this.o.db, this.fence(), this.o.onlyLiveIsSelf, this.o.now());
    this.stale = undefined;
    this.o.logger.warn("instance lease re-acquired with a new epoch; serving deliveries again", {
      instance: this.o.id,
      lostEpoch: lost,
      epoch: this.current,
      uncertain: ids,
    });
  }
}

/** What a lead hears from a replica whose lease is lost: nothing was done, and any replica may take the call again. */
export function leaseLostRefusal(what: string): FleetError {
  return new FleetError(
    ErrorCode.Unavailable,
    `this controller replica lost its instance lease (it paused or lost the journal past it) and is re-registering; nothing was ${what} — call again, any replica serves`,
    { retryable: true },
  );
}
