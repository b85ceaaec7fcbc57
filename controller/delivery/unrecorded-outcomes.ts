/**
 * Outcomes the controller knows but the journal could not record (its database went away
 * between the receipt and the settle). Each is one idempotent transaction, retried in order
 * until it commits, so a transient outage neither loses a known outcome nor leaves its
 * receipt in flight — where it would fence the same text and refuse its own id for good. If
 * the controller stops first, boot recovery marks those receipts uncertain, which is still
 * true: nothing is ever resent.
 */
import type { Logger } from "../../shared/logger.js";

interface Pending {
  what: string;
  record: () => Promise<void>;
}

export class UnrecordedOutcomes {
  private readonly pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly logger: Logger,
    private readonly retryMs = 1000,
  ) {}

  get size(): number {
    return this.pending.length;
  }

  /** Keeps `record` until it commits; `what` names it in the log. */
  add(what: string, record: () => Promise<void>): void {
    this.pending.push({ what, record });
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
        try {
          await next.record();
        } catch {
          return;
        }
        this.pending.shift();
        this.logger.info("outcome recorded after the journal came back", { what: next.what });
      }
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.length = 0;
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
