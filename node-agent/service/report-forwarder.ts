/**
 * Forwards the worker outbox to the controller: at most one batch in flight, every
 * second, removing each report only after the controller said it holds it (so a lost
 * answer means a harmless resend of the same ids, which the controller ignores).
 */
import type { Logger } from "../../shared/logger.js";
import type { Outbox } from "../mailbox/outbox.js";

const FORWARD_INTERVAL_MS = 1000;
const BATCH = 64;

export interface ReportSink {
  submitWorkerReports(
    reports: { id: string; seatName: string; text: string; createdAtMs: number }[],
  ): Promise<string[]>;
}

export function startReportForwarder(
  outbox: Outbox,
  sink: ReportSink,
  logger: Logger,
): { flush(): Promise<void>; stop(): void } {
  let running: Promise<void> | undefined;
  const flush = (): Promise<void> => {
    if (running) return running;
    running = (async () => {
      // Yield first, so the finally below never runs before `running` is assigned.
      await Promise.resolve();
      try {
        const { reports } = outbox.list();
        for (let i = 0; i < reports.length; i += BATCH) {
          const batch = reports.slice(i, i + BATCH);
          const accepted = new Set(await sink.submitWorkerReports(batch));
          for (const r of batch) if (accepted.has(r.id)) outbox.remove(r.seatName, r.id);
        }
      } catch (e) {
        logger.warn("worker reports not forwarded yet", { error: (e as Error).message });
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  const timer = setInterval(() => void flush(), FORWARD_INTERVAL_MS);
  timer.unref();
  return { flush, stop: () => clearInterval(timer) };
}
