/**
 * A bound on how long the controller waits for its PostgreSQL to answer at all. The server's
 * own `statement_timeout` and `lock_timeout` (open.ts) end a statement that runs too long, but
 * a server that cannot answer — stopped, frozen, or behind a link that drops every packet —
 * sends nothing, and its TCP connections still look alive: every call then waited for the
 * lead's own timeout (60 s by the SDK's default) and the controller never answered. Past the
 * deadline the caller gets a typed error at once; the statement may still run later, when the
 * server answers, and a caller that must act on that passes `late`.
 */
export const NO_ANSWER_CODE = "JOURNAL_NO_ANSWER";

/** The database sent no answer within the deadline (journalCause shows it as its code). */
export class JournalNoAnswerError extends Error {
  override readonly name = "JournalNoAnswerError";
  readonly code = NO_ANSWER_CODE;
  constructor(readonly deadlineMs: number) {
    super(`the database sent no answer within ${deadlineMs} ms`);
  }
}

// Keyed by the database handle (open.ts's `Db`; typed as object so open.ts can import this file).
const deadlines = new WeakMap<object, number>();

/** Sets the deadline for statements on `db` (PostgreSQL only: the embedded database cannot stop apart from the controller). */
export function setAnswerDeadline(db: object, ms: number): void {
  deadlines.set(db, ms);
}

/**
 * `pending`, or a JournalNoAnswerError once `db`'s deadline has passed without an answer. A
 * result that comes after that is handed to `late`; a late failure is dropped, as nothing
 * was done.
 */
export function answerWithin<T>(db: object, pending: Promise<T>, late?: (value: T) => void): Promise<T> {
  const ms = deadlines.get(db);
  return ms === undefined ? pending : answerWithinMs(ms, pending, late);
}

/** `answerWithin` with the deadline given. */
export function answerWithinMs<T>(ms: number, pending: PromiseLike<T>, late?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let past = false;
    const timer = setTimeout(() => {
      past = true;
      reject(new JournalNoAnswerError(ms));
    }, ms);
    pending.then(
      (v) => {
        clearTimeout(timer);
        if (!past) resolve(v);
        else late?.(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        if (!past) reject(e);
      },
    );
  });
}
