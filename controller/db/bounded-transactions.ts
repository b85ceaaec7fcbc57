/**
 * Every transaction on the journal's PostgreSQL meets the answer deadline as a whole
 * (answer-deadline.ts, ADR 0033): its statements run on a connection postgres.js reserves for
 * it, which the per-statement bound (bounded-statements.ts) does not see. One given up on may
 * still commit when the server answers; like a bounded write, each is what its caller asked
 * for (a registration, a settle of evidence, a token), except the admissions, whose commit
 * stands for an effect the lead was told will not happen: they use `transactionLate`, which
 * hands a late commit's result to the caller to undo (transaction-late.ts).
 */
import { answerWithin } from "./answer-deadline.js";

// Typed by shape, not as open.ts's Db, so open.ts can import this file without a cycle.
type Run = (fn: (tx: never) => Promise<unknown>, ...rest: unknown[]) => Promise<unknown>;
const unbounded = new WeakMap<object, Run>();

/** Bounds `db.transaction` by `db`'s answer deadline (set first with setAnswerDeadline). */
export function boundTransactions(db: object): void {
  const d = db as { transaction: Run };
  const raw = d.transaction.bind(d);
  unbounded.set(db, raw);
  d.transaction = (fn, ...rest) => answerWithin(db, raw(fn, ...rest));
}

/** `db.transaction` as it was before it was bounded (for transaction-late.ts). */
export function unboundedTransaction(db: object): Run | undefined {
  return unbounded.get(db);
}
