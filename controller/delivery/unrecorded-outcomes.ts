/**
 * Outcomes the controller knows but the journal could not record (its database went away
 * between the receipt and the settle): a dispatch's or a hire's, or a call refused because its
 * admission got no answer (journal/refused-admission.ts). Each is one idempotent settle, retried in
 * order until it commits, so a transient outage neither loses a known outcome nor leaves its
 * receipt in flight — where it would fence the same text and refuse its own id for good.
 *
 * With a spill file (the controller's state dir) each pending outcome is also on disk before
 * the lead hears it; the next boot records them before recovery marks in-flight receipts
 * uncertain, so a decided answer (a journal_unavailable not-sent, say) never comes back as
 * another one after a crash.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import type { Logger } from "../../shared/logger.js";
import { writeFileDurably } from "../../shared/durable-file.js";
import type { HireSettleParams } from "../journal/hire-outcome.js";
import type { SettleParams } from "./receipt-types.js";
import { isRefusedAdmission, type RefusedAdmission } from "../journal/refused-admission.js";
import { isFencedWrite, type InstanceEpoch } from "../journal/lease-guard.js";

/** A dispatch's settle, a hire's (`kind: "hire"`), or a refused admission's (`kind: "refused_admission"`). */
export type PendingSettle = SettleParams | HireSettleParams | RefusedAdmission;

interface Pending {
  what: string;
  params: PendingSettle;
  /** Told the write's result once it commits, or the refusal once the journal refused it for good. */
  onDone?: ((recorded: unknown, refused?: Error) => void) | undefined;
}

/** Records one outcome; `writer` is the instance writing it when it is not the one that admitted the call (a boot replay). */
export type RecordSettle = (p: PendingSettle, writer?: InstanceEpoch) => Promise<unknown>;

export function isHireSettle(p: PendingSettle): p is HireSettleParams {
  return "kind" in p && p.kind === "hire";
}

export class UnrecordedOutcomes {
  private readonly pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly logger: Logger,
    private readonly write: RecordSettle,
    private readonly spillFile?: string,
    private readonly retryMs = 1000,
  ) {}

  get size(): number {
    return this.pending.length;
  }

  /**
   * Keeps `params` until they commit; `what` names them in the log. `onDone` hears the result when
   * they commit (a settle's hand-off of its seat's lease), or the refusal when they never will.
   */
  add(what: string, params: PendingSettle, onDone?: (recorded: unknown, refused?: Error) => void): void {
    this.pending.push({ what, params, onDone });
    this.spill();
    this.logger.warn("outcome not recorded; retrying until the journal is back", { what });
    this.schedule();
  }

  /** Tries every pending record now; resolves when the queue is empty or a record failed again. */
  async flush(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.pending.length) {
        const next = this.pending[0]!;
        let recorded: unknown;
        try {
          recorded = await this.write(next.params);
        } catch (e) {
          if (!isFencedWrite(e)) return;
          // Refused for good (ADR 0036): this replica lost the lease the call was admitted under, and the
          // fleet has taken the call over or will; retrying could never land it.
          this.pending.shift();
          this.spill();
          this.logger.error(
            "an outcome this replica decided was refused by the journal: its instance lease epoch is no longer live; the receipt stays as the fleet records it",
            { what: next.what },
          );
          next.onDone?.(undefined, e);
          continue;
        }
        this.pending.shift();
        this.spill();
        this.logger.info("outcome recorded after the journal came back", { what: next.what });
        next.onDone?.(recorded);
      }
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  /** Stops retrying; what is still pending stays in the spill file for the next boot. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.length = 0;
  }

  private spill(): void {
    if (!this.spillFile) return;
    try {
      if (this.pending.length) writeFileDurably(this.spillFile, JSON.stringify(this.pending.map((p) => p.params)));
      else rmSync(this.spillFile, { force: true });
    } catch (e) {
      this.logger.error("unrecorded outcomes could not be kept on disk", { error: (e as Error).message });
    }
  }

  private schedule(): void {
    if (this.timer || !this.pending.length) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.retryMs);
    this.timer.unref();
  }
}

/**
 * At boot, before orphan recovery: records the outcomes a previous process decided but could
 * not record. Returns how many; throws (the boot fails) if the journal refuses them.
 */
export async function recordSpilled(spillFile: string, write: RecordSettle, logger?: Logger): Promise<number> {
  if (!existsSync(spillFile)) return 0;
  const all = JSON.parse(readFileSync(spillFile, "utf8")) as (PendingSettle & { now: string })[];
  for (const p of all) {
    try {
      await write(
        isHireSettle(p) || isRefusedAdmission(p)
          ? { ...p, now: new Date(p.now) }
          : { ...p, now: new Date(p.now), holder: null },
      );
    } catch (e) {
      // A call a peer took over when the stopped process's lease expired stays as the fleet recorded it (ADR 0036).
      if (!isFencedWrite(e)) throw e;
      logger?.warn("a stopped controller's decided outcome was not recorded: its call was taken over by a peer", {
        id: p.id,
      });
    }
  }
  rmSync(spillFile, { force: true });
  return all.length;
}
