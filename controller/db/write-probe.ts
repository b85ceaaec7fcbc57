/**
 * Can the journal take a write right now? Health answers this, not "does `select 1` work"
 * (issue 11: health said SERVING while the journal refused every write). In one transaction
 * that is always rolled back: the receipt tables' write lock (so a table lock held elsewhere
 * shows), and a real row write (so a read-only or full database shows). Bounded by its own
 * short lock and statement timeouts, and by the answer deadline when the server answers
 * nothing (ADR 0033): the probe always rolls back, so one that ends after it changed nothing.
 */
import { eq, sql } from "drizzle-orm";
import type { Db } from "./open.js";
import { callReceipts, controllerInstances, deliveryReceipts, seatTurns } from "./schema.js";

class ProbeDone extends Error {}

export async function probeJournalWrite(db: Db, instanceId: string, driver: "pglite" | "postgres"): Promise<void> {
  try {
    // Every transaction has the answer deadline (bounded-transactions.ts).
    await db.transaction(async (tx) => {
      if (driver === "postgres") {
        await tx.execute(sql`set local lock_timeout = 1000`);
        await tx.execute(sql`set local statement_timeout = 2000`);
        await tx.execute(sql`lock table ${callReceipts}, ${deliveryReceipts}, ${seatTurns} in row exclusive mode`);
      }
      await tx
        .update(controllerInstances)
        .set({ heartbeatAt: sql`${controllerInstances.heartbeatAt}` })
        .where(eq(controllerInstances.id, instanceId));
      throw new ProbeDone();
    });
  } catch (e) {
    if (e instanceof ProbeDone) return;
    throw e;
  }
}
