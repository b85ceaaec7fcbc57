/**
 * A transaction bounded by the journal's answer deadline whose result, should it commit after
 * the deadline, goes to `late` (ADR 0033): for the admissions, whose commit stands for an
 * effect the lead was told will not happen, so the caller settles it at once.
 */
import { answerWithin } from "./answer-deadline.js";
import { unboundedTransaction } from "./bounded-transactions.js";
import type { Db, Tx } from "./open.js";

export function transactionLate<T>(db: Db, fn: (tx: Tx) => Promise<T>, late: (value: T) => void): Promise<T> {
  const raw = unboundedTransaction(db) as ((f: (tx: Tx) => Promise<T>) => Promise<T>) | undefined;
  return answerWithin(db, raw ? raw(fn) : db.transaction(fn), late);
}
