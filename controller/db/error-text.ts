/**
 * What a lead or an owner may read about a database failure: its kind in words, never the
 * SQL, its parameters, column names or SQLSTATE (issue 11: a NUL byte in `seat` answered with
 * the query and its parameters; issue 32 item 7: nor the SQLSTATE). The full error, code
 * included, goes to the controller's log instead.
 */
import {
  DatabaseUnreachableError,
  FleetError,
  InvalidArgumentError,
  JournalUnavailableError,
} from "../../shared/errors.js";
import { NO_ANSWER_CODE } from "./answer-deadline.js";

const KINDS: Record<string, string> = {
  "55P03": "lock wait timed out",
  "57014": "statement timed out",
  "25P03": "transaction idle timeout",
  "25006": "database is read-only",
  "53100": "database disk is full",
  "53300": "too many database connections",
  "57P01": "database is shutting down",
  "57P03": "database is starting up",
  "40001": "serialization failure",
  "40P01": "deadlock",
  "22021": "text holds a byte the journal cannot store (such as NUL)",
  "22P05": "text holds a character the journal cannot store (such as \\u0000)",
};

/** The SQLSTATE or driver code of the innermost database error, if any. */
export function dbErrorCode(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < 6; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z_]{4,40}$/.test(code)) return code;
  }
  return undefined;
}

// A statement that failed with one of these may have committed all the same: it was on the
// wire when the connection went (a primary killed or failed over, a server shutdown), and the
// commit's answer is what was lost. 08007 is PostgreSQL's own "transaction resolution unknown".
const COMMIT_UNKNOWN = new Set([
  NO_ANSWER_CODE,
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "ECONNRESET",
  "EPIPE",
  "57P01",
  "57P02",
  "08006",
  "08007",
]);

/**
 * Whether a failed write may still have been applied: the database never answered (ADR 0033), or
 * the connection was lost while the statement was in flight (issue 34 item 5: a primary's
 * failover). A caller that must keep its answer true (an admission refused not sent) records
 * its refusal by id for these, as it does for no answer; for any other failure the statement
 * was rolled back.
 */
export function commitUnknown(e: unknown): boolean {
  const code = dbErrorCode(e);
  return code !== undefined && COMMIT_UNKNOWN.has(code);
}

/** A short, safe description: "lock wait timed out", "the database connection closed", "database error". */
export function journalCause(e: unknown): string {
  const code = dbErrorCode(e);
  if (!code) return "database error";
  if (code === NO_ANSWER_CODE) return `the database sent no answer in time (${code})`;
  if (/^[0-9A-Z]{5}$/.test(code)) return KINDS[code] ?? "database error";
  // A driver's own code (CONNECTION_CLOSED, ECONNREFUSED) is no SQL, and says what happened.
  return code;
}

/** A failed journal write as the typed error a lead sees: bad text is the caller's (invalid_argument), the rest is journal_unavailable. */
export function journalFailure(e: unknown, what: string): FleetError {
  const code = dbErrorCode(e);
  if (code?.startsWith("22")) return new InvalidArgumentError(`${what}: ${journalCause(e)}`);
  return new JournalUnavailableError(`${what} (${journalCause(e)})`, e);
}

/** A failed read as its caller sees it: a database failure is journal_unavailable (or the caller's bad text); any other error is left as it is. */
export function readFailure(e: unknown, what = "the receipt journal could not be read"): unknown {
  if (e instanceof FleetError || dbErrorCode(e) === undefined) return e;
  return journalFailure(e, what);
}

/**
 * Any database failure at the service boundary as journal_unavailable, never internal. One the
 * database did not answer (answer-deadline.ts) may be a write that is still applied when it
 * answers, and the caller is told so; other failures were rolled back.
 */
export function databaseFailure(e: unknown): unknown {
  if (e instanceof FleetError || dbErrorCode(e) === undefined) return e;
  if (dbErrorCode(e) === NO_ANSWER_CODE)
    return new JournalUnavailableError(
      `${journalCause(e)}; a change asked for may still be applied when it answers, so look before repeating it`,
      e,
    );
  return journalFailure(e, "the journal failed");
}

/** A database failure while the controller starts, as the start's typed error (database_unreachable, never internal), naming the step. */
export function bootFailure(e: unknown, step: string): unknown {
  if (e instanceof FleetError || dbErrorCode(e) === undefined) return e;
  return new DatabaseUnreachableError(
    `the database failed while the controller was ${step} (${journalCause(e)}); the controller did not start`,
    e,
  );
}

/** `f()`, with a database failure typed as the start's (bootFailure). */
export async function bootStep<T>(step: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw bootFailure(e, step);
  }
}
