/**
 * The journal behind a connection pooler (pgbouncer, issue 34 item 5), declared by the URL
 * parameter `pool_mode=transaction` (or `session`). In transaction mode a client's statements
 * may each run on another server connection, so nothing may live in the session:
 * - no named prepared statements (postgres.js `prepare: false`, set in open.ts);
 * - no timeouts as startup parameters: pgbouncer refuses every startup parameter it does not
 *   track ("unsupported startup parameter: statement_timeout", in session mode too), so each
 *   statement runs in a transaction that first sets them with set_config(..., is_local => true);
 * - no session advisory lock for the migrations: they run in one transaction that takes a
 *   transaction-level advisory lock first (migrateInOneTransaction).
 * An autocommit statement so costs three more round trips (begin, the settings, commit); the
 * direct connection, without `pool_mode`, keeps its startup parameters and single round trip.
 */
import type { Sql, TransactionSql } from "postgres";
import { InvalidArgumentError } from "../../shared/errors.js";

// open.ts's JournalTimeouts, by shape: open.ts imports this file.
interface JournalTimeouts {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
  idleInTransactionMs: number;
}

/** The parameter that declares a pooler; removed from the URL before postgres.js reads it (it would send it as a startup parameter). */
export const POOL_MODE_PARAM = "pool_mode";

export interface PoolerTarget {
  /** The URL for postgres.js, without `pool_mode`. */
  url: string;
  poolMode: "transaction" | "session" | undefined;
}

export function poolerTarget(url: string): PoolerTarget {
  const q = url.indexOf("?");
  if (q < 0) return { url, poolMode: undefined };
  const params = new URLSearchParams(url.slice(q + 1));
  const mode = params.get(POOL_MODE_PARAM);
  if (mode === null) return { url, poolMode: undefined };
  if (mode !== "transaction" && mode !== "session")
    throw new InvalidArgumentError(
      `the database URL's ${POOL_MODE_PARAM} must be transaction or session, not ${JSON.stringify(mode)}`,
    );
  params.delete(POOL_MODE_PARAM);
  const rest = params.toString();
  return { url: url.slice(0, q) + (rest ? `?${rest}` : ""), poolMode: mode };
}

/** One statement setting the journal's timeouts for the current transaction only. */
export function setLocalTimeouts(t: JournalTimeouts): string {
  return (
    `select set_config('lock_timeout', '${Math.trunc(t.lockTimeoutMs)}', true), set_config('statement_timeout', '${Math.trunc(t.statementTimeoutMs)}', true), ` +
    `set_config('idle_in_transaction_session_timeout', '${Math.trunc(t.idleInTransactionMs)}', true)`
  );
}

interface Pending extends PromiseLike<unknown> {
  values(): unknown;
}
type Begin = (...args: unknown[]) => Promise<unknown>;

/**
 * The same client for drizzle, with the timeouts set in every transaction: drizzle's own
 * (`begin`) and one around each statement it sends on its own (`unsafe`).
 */
export function timeoutsPerTransaction(client: Sql, timeouts: JournalTimeouts): Sql {
  const settings = setLocalTimeouts(timeouts);
  const begin = (client.begin as Begin).bind(client);
  const beginWith = (...args: unknown[]): Promise<unknown> => {
    const fn = args.pop() as (t: TransactionSql) => unknown;
    return begin(...args, async (t: TransactionSql) => {
      await t.unsafe(settings);
      return fn(t);
    });
  };
  const unsafe = (query: string, params?: unknown[], options?: unknown) => {
    let asValues = false;
    // Started only when awaited, as postgres.js's own statements are, so `.values()` still applies.
    const run = () =>
      beginWith(async (t: TransactionSql) => {
        const q = (t.unsafe as (q: string, p?: unknown[], o?: unknown) => Pending)(query, params, options);
        return asValues ? q.values() : q;
      });
    // biome-ignore lint/suspicious/noThenProperty: a lazy thenable is the point, as postgres.js's statements are.
    const thenable = { then: (ok?: (v: unknown) => unknown, fail?: (e: unknown) => unknown) => run().then(ok, fail) };
    return { ...thenable, values: () => ((asValues = true), thenable) };
  };
  return new Proxy(client, {
    get: (target, prop) =>
      prop === "unsafe" ? unsafe : prop === "begin" ? beginWith : Reflect.get(target, prop, target),
  });
}

/**
 * Runs `migrate(client)` in one transaction that first takes the migration lock as a
 * transaction-level advisory lock: behind a transaction-mode pooler a session lock would stay
 * on whichever server connection took it. drizzle's own transaction becomes a savepoint in it,
 * and its read of the applied migrations comes after the lock, so a second controller waits
 * and then finds them applied.
 */
export async function migrateInOneTransaction(
  client: Sql,
  lockKey: number,
  migrate: (client: Sql) => Promise<void>,
): Promise<void> {
  await client.begin(async (t) => {
    await t.unsafe(`select pg_advisory_xact_lock(${Math.trunc(lockKey)})`);
    // drizzle reads the client's type parsers from `options`, which only the outer client has.
    const nested = new Proxy(t, {
      get: (target, prop) =>
        prop === "begin"
          ? (fn: (s: TransactionSql) => unknown) => target.savepoint(fn)
          : prop === "options"
            ? client.options
            : Reflect.get(target, prop, target),
    });
    await migrate(nested as unknown as Sql);
  });
}
