/**
 * The journal's hot-path statements (ADR 0013): raw SQL written once with drizzle's `sql`
 * template and placeholders, prepared once per database handle, and executed with values
 * only. postgres.js then sends a named prepared statement (one round trip: Bind/Execute/Sync,
 * no re-parse, no re-plan); PGlite runs the same text in process. One code path for both
 * drivers; drizzle's query builder stays for the schema, the migrations and the cold paths.
 */
import { sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Db } from "../db/open.js";
import { answerWithin } from "../db/answer-deadline.js";

export type Row = Record<string, unknown>;

/** Told how long each statement took to answer, by its name (the metrics' statement histogram). */
export type StatementObserver = (name: string, seconds: number) => void;
const observers = new WeakMap<Db, StatementObserver>();

/** Times every statement run on `db` from now on; the time is the statement's own, past any answer deadline. */
export function observeStatements(db: Db, observe: StatementObserver): void {
  observers.set(db, observe);
}

/** A statement prepared on one database handle; `run` sends only its values. */
export interface Statement<P extends Record<string, unknown>> {
  /** Rejects with JournalNoAnswerError past the handle's answer deadline; rows that come after it go to `late`. */
  run(values: P, late?: (rows: Row[]) => void): Promise<Row[]>;
}

const dialect = new PgDialect();
const prepared = new WeakMap<Db, Map<string, { execute(v: Record<string, unknown>): Promise<unknown> }>>();

/** A named placeholder: its value is bound at `run`, never spliced into the text. */
export const p = (name: string) => sql.placeholder(name);

/**
 * Declares a statement; it is built into text on first use per handle and reused after.
 * `name` is the server-side statement name's root and a marker comment in the text (tests
 * and `pg_stat_activity` can tell the statements apart by it).
 */
export function statement<P extends Record<string, unknown>>(name: string, build: () => SQL): (db: Db) => Statement<P> {
  return (db) => {
    let byName = prepared.get(db);
    if (!byName) prepared.set(db, (byName = new Map()));
    let q = byName.get(name);
    if (!q) {
      const query = dialect.sqlToQuery(sql`/* clankie:${sql.raw(name)} */ ${build()}`);
      // drizzle's session prepares by name: postgres.js then uses a server-side prepared statement.
      q = db._.session.prepareQuery(query, undefined, name, false) as unknown as {
        execute(v: Record<string, unknown>): Promise<unknown>;
      };
      byName.set(name, q);
    }
    const run = q;
    return {
      run: (values, late) => {
        const observe = observers.get(db);
        const startedAt = observe ? performance.now() : 0;
        const pending = run.execute(values).then(rowsOf);
        if (observe) {
          const done = () => observe(name, (performance.now() - startedAt) / 1000);
          // Both handlers: this branch never leaves a rejection unhandled; answerWithin reports it.
          pending.then(done, done);
        }
        return answerWithin(db, pending, late);
      },
    };
  };
}

/** postgres.js answers an array of rows, PGlite `{ rows }`. */
function rowsOf(result: unknown): Row[] {
  if (Array.isArray(result)) return result as Row[];
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}

/** A timestamp as the driver-neutral text PostgreSQL casts with `::timestamptz`. */
export function ts(d: Date | null | undefined): string | null {
  return d ? d.toISOString() : null;
}

/** JSON for a `::text::jsonb` parameter: bound as text on both drivers, never double-encoded. */
export function json(v: unknown): string | null {
  return v === undefined || v === null ? null : JSON.stringify(v);
}

/** A boolean column as either driver answers it: true, or PostgreSQL's text "t". */
export const asBool = (v: unknown): boolean => v === true || v === "t";

export function asDate(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  return v instanceof Date ? v : new Date(String(v));
}
