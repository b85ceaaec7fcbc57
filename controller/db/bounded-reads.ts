/**
 * Every plain read meets the answer deadline (answer-deadline.ts, ADR 0033), not only the
 * hot path's statements: with the server answering nothing, list_seats, status, the
 * dashboard and the owner's reads waited for the lead's or the CLI's own timeout. The
 * deadline is applied where drizzle hands a statement to postgres.js, to an autocommit
 * statement that begins with `select` only: a read has no effect, so giving up on it is
 * always safe, and a late answer is dropped. Writes, and every statement inside a
 * transaction (postgres.js gives those their own client), are left alone: a write that
 * commits after its caller was told it failed needs a `late` handler of its own, which the
 * hot path's statements have (their text begins with a marker comment, so they are not
 * bounded twice). A read past its deadline is not cancelled: postgres.js cancels a running
 * query over a new connection and drops that attempt's promise, so a cancel that cannot
 * connect (a link that drops every packet) would end the controller with an unhandled
 * rejection. It runs when the server answers again, and its rows are dropped.
 */
import type { Sql } from "postgres";
import { answerWithinMs } from "./answer-deadline.js";

const PLAIN_READ = /^\s*select\b/i;

interface PendingRead extends PromiseLike<unknown> {
  values(): unknown;
}

/** The same client for drizzle, with the deadline on each plain read. */
export function boundReads(client: Sql, deadlineMs: number): Sql {
  const unsafe = (query: string, params?: unknown[], options?: unknown): unknown => {
    const pending = (client.unsafe as (q: string, p?: unknown[], o?: unknown) => PendingRead)(query, params, options);
    return PLAIN_READ.test(query) ? bounded(pending, deadlineMs) : pending;
  };
  return new Proxy(client, { get: (target, prop) => (prop === "unsafe" ? unsafe : Reflect.get(target, prop, target)) });
}

/** A thenable that starts the query only when awaited, as postgres.js's own does, so `.values()` still applies. */
function bounded(pending: PendingRead, ms: number): PromiseLike<unknown> & { values(): PromiseLike<unknown> } {
  const answer = () => answerWithinMs(ms, pending);
  return {
    values() {
      pending.values();
      return { then: (ok, fail) => answer().then(ok, fail) };
    },
    then: (ok, fail) => answer().then(ok, fail),
  };
}
