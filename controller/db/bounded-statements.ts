/**
 * Every statement drizzle sends on its own meets the answer deadline (answer-deadline.ts, ADR
 * 0033), not only the hot path's: with the server answering nothing, list_seats, status, the
 * dashboard, the owner's commands and the agents' heartbeats waited for their caller's own
 * timeout, or for ever. The deadline is applied where drizzle hands a statement to
 * postgres.js, to an autocommit `select`, `insert`, `update` or `delete`. A read has no effect,
 * so giving up on it is always safe, and a late answer is dropped. A write given up on may
 * still be applied when the server answers: each such write is what its caller asked for
 * (a heartbeat, a seat, a token, a setting), so the caller is told the database did not
 * answer, and a later retry meets what was applied. A write whose late effect must be undone
 * has a `late` handler of its own: the hot path's statements (their text begins with a marker
 * comment, so they are not bounded here twice), and the admissions that use `transactionLate`
 * (bounded-transactions.ts); statements inside a transaction run on postgres.js's own client
 * for it and are bounded as a whole there. A statement past its deadline is not cancelled:
 * postgres.js cancels a running query over a new connection and drops that attempt's promise,
 * so a cancel that cannot connect (a link that drops every packet) would end the controller
 * with an unhandled rejection.
 */
import type { Sql } from "postgres";
import { answerWithinMs } from "./answer-deadline.js";

// What drizzle builds; the hot path's own statements begin with a comment and are not matched.
const DRIZZLE_STATEMENT = /^\s*(select|insert|update|delete)\b/i;

interface PendingStatement extends PromiseLike<unknown> {
  values(): unknown;
}

/** The same client for drizzle, with the deadline on each statement it sends on its own. */
export function boundStatements(client: Sql, deadlineMs: number): Sql {
  const unsafe = (query: string, params?: unknown[], options?: unknown): unknown => {
    const pending = (client.unsafe as (q: string, p?: unknown[], o?: unknown) => PendingStatement)(
      query,
      params,
      options,
    );
    return DRIZZLE_STATEMENT.test(query) ? bounded(pending, deadlineMs) : pending;
  };
  return new Proxy(client, { get: (target, prop) => (prop === "unsafe" ? unsafe : Reflect.get(target, prop, target)) });
}

/** A thenable that starts the query only when awaited, as postgres.js's own does, so `.values()` still applies. */
function bounded(pending: PendingStatement, ms: number): PromiseLike<unknown> & { values(): PromiseLike<unknown> } {
  const answer = () => answerWithinMs(ms, pending);
  return {
    values() {
      pending.values();
      // biome-ignore lint/suspicious/noThenProperty: a lazy thenable is the point, as drizzle expects of a driver.
      return { then: (ok, fail) => answer().then(ok, fail) };
    },
    // biome-ignore lint/suspicious/noThenProperty: started only when awaited, like postgres.js's own statements.
    then: (ok, fail) => answer().then(ok, fail),
  };
}
