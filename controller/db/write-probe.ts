/**
 * Can the journal take a write right now? Health answers this, not "does `select 1` work"
 * (issue 11: health said SERVING while the journal refused every write). The receipt tables'
 * write lock (so a table lock held elsewhere shows), and a real row write (so a read-only or full
 * database shows), always rolled back. Bounded by its own short lock timeout, the connection's
 * statement timeout, and the answer deadline when the server answers nothing (ADR 0033): the
 * probe always rolls back, so one that ends after it changed nothing.
 *
 * On PostgreSQL it is one statement, one round trip (issue 36: it was six a probe, a third of a
 * 1,000-agent controller's statements at idle): a DO block that ends by raising, which rolls it back.
 */
import { eq, getTableName, sql } from "drizzle-orm";
import { journalCause } from "./error-text.js";
import type { Db } from "./open.js";
import { callReceipts, controllerInstances, deliveryReceipts, seatTurns } from "./schema.js";

class ProbeDone extends Error {}

/** What the probe's DO block raises once it has written: the probe's success, and its rollback. */
const DONE = "clankie journal write probe done";

/** An instance id as a literal inside the DO block (it takes no parameters); only ids the controller makes. */
function literal(instanceId: string): string {
  if (!/^[A-Za-z0-9_.:-]+$/.test(instanceId)) throw new TypeError(`not an instance id: ${instanceId}`);
  return `'${instanceId}'`;
}

/** The server's own error, not drizzle's wrapper (whose message quotes the statement, DONE included). */
const serverMessage = (e: unknown): string | undefined => {
  const err = e as { message?: string; cause?: { message?: string } };
  return err.cause?.message ?? err.message;
};

export async function probeJournalWrite(db: Db, instanceId: string, driver: "pglite" | "postgres"): Promise<void> {
  if (driver === "postgres") {
    try {
      await db.execute(
        sql.raw(`do $probe$ begin
  perform set_config('lock_timeout', '1000', true);
  lock table ${[callReceipts, deliveryReceipts, seatTurns].map(getTableName).join(", ")} in row exclusive mode;
  update ${getTableName(controllerInstances)} set heartbeat_at = heartbeat_at where id = ${literal(instanceId)};
  raise exception '${DONE}';
end $probe$`),
      );
    } catch (e) {
      if (serverMessage(e) === DONE) return;
      throw unwritable(e);
    }
    throw new Error("the journal write probe ended without its rollback");
  }
  try {
    // Every transaction has the answer deadline (bounded-transactions.ts).
    await db.transaction(async (tx) => {
      await tx
        .update(controllerInstances)
        .set({ heartbeatAt: sql`${controllerInstances.heartbeatAt}` })
        .where(eq(controllerInstances.id, instanceId));
      throw new ProbeDone();
    });
  } catch (e) {
    if (e instanceof ProbeDone) return;
    throw unwritable(e);
  }
}

/**
 * Why the journal cannot take a write, in words: /readyz shows it to anyone, so never drizzle's
 * message, which quotes the probe's statement (the failure itself stays as the cause).
 */
const unwritable = (e: unknown) => new Error(`the journal cannot take a write (${journalCause(e)})`, { cause: e });
