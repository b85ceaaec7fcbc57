/**
 * The migrations at start run on a connection of their own, with no statement timeout: a
 * migration may legitimately run long (an index over a million receipts), and the migration
 * lock may legitimately wait for another controller that is migrating. A server that answers
 * nothing at all (stopped, frozen, behind a link that drops every packet, ADR 0033) left the
 * start waiting for ever, with nothing said. So while they run, a second connection asks the
 * server `select 1` every few seconds, bounded by the answer deadline: a server that answers it
 * is alive, and the start keeps waiting; one that does not ends the start with a typed error.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Sql } from "postgres";
import { answerWithinMs } from "./answer-deadline.js";

export const MIGRATION_PROBE_EVERY_MS = 2_000;

/** Why the start gave up: the server stopped answering while the migrations ran. */
export class MigrationsUnansweredError extends Error {
  override readonly name = "MigrationsUnansweredError";
  constructor(readonly probeError: Error) {
    super(
      `the server stopped answering while the migrations ran (a second connection's select 1: ${probeError.message})`,
      { cause: probeError },
    );
  }
}

/**
 * `run()`'s result, or MigrationsUnansweredError as soon as `probe` (a client of its own, ended
 * here) gets no answer within `deadlineMs`. `run()` is not cancelled here; the caller ends its
 * connection, and the server rolls back what it had not committed.
 */
export async function whileServerAnswers<T>(
  probe: Sql,
  deadlineMs: number,
  run: () => Promise<T>,
  everyMs = MIGRATION_PROBE_EVERY_MS,
): Promise<T> {
  const stop = new AbortController();
  const watch = (async (): Promise<never> => {
    for (;;) {
      await sleep(everyMs, undefined, { signal: stop.signal, ref: false });
      try {
        await answerWithinMs(deadlineMs, probe`select 1`);
      } catch (e) {
        if (stop.signal.aborted) return new Promise<never>(() => {});
        throw new MigrationsUnansweredError(e as Error);
      }
    }
  })();
  // After the migrations end, the loop's sleep is aborted: that rejection is not a failure.
  watch.catch(() => {});
  try {
    return await Promise.race([run(), watch]);
  } finally {
    stop.abort();
    await probe.end({ timeout: 0 }).catch(() => {});
  }
}
