/**
 * Controller processes on this journal. Each heartbeats; an in-flight call whose
 * controller stopped heartbeating died mid-call: its receipt becomes uncertain (never
 * replayed) and its delivery gets a fence, so only a settle path frees it (scenario 2).
 */
import { isProcessAlive } from "../../shared/process-alive.js";
import { hostname } from "node:os";
import { and, eq, inArray, lt, notInArray, sql } from "drizzle-orm";
import { callReceipts, controllerInstances, deliveryReceipts, seatTurns } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { CallState } from "./call-receipts.js";
import { openFence } from "./fences.js";

/** A controller silent this long is dead (heartbeats come every 5 s). */
export const INSTANCE_DEAD_AFTER_MS = 30_000;

export async function registerInstance(db: Db, id: string, pid: number, host: string): Promise<void> {
  await db.insert(controllerInstances).values({ id, pid, host });
}


export async function heartbeatInstance(db: Db, id: string): Promise<void> {
  await db.update(controllerInstances).set({ heartbeatAt: sql`now()` }).where(eq(controllerInstances.id, id));
}

export async function removeInstance(db: Db, id: string): Promise<void> {
  await db.delete(controllerInstances).where(eq(controllerInstances.id, id));
}

/**
 * Marks the in-flight calls of dead controllers uncertain and frees their seat leases. `onlyLiveIsSelf` is true for
 * the embedded database, which only one process can open: every other instance is dead.
 */
export async function recoverOrphans(db: Db, selfId: string, onlyLiveIsSelf: boolean, now: Date, host = hostname()): Promise<string[]> {
  const live = onlyLiveIsSelf
    ? [selfId]
    : (
        await db
          .select({ id: controllerInstances.id, pid: controllerInstances.pid, host: controllerInstances.host })
          .from(controllerInstances)
          .where(sql`${controllerInstances.heartbeatAt} > now() - make_interval(secs => ${INSTANCE_DEAD_AFTER_MS / 1000})`)
      )
        // A recent heartbeat from a process on this host that no longer exists is a crash.
        .filter((r) => r.id === selfId || r.host !== host || isProcessAlive(r.pid))
        .map((r) => r.id);
  const recovered = await db.transaction(async (tx) => {
    // A dead controller's seat leases are freed at once: its deliveries will never settle them.
    await tx.delete(seatTurns).where(sql`split_part(${seatTurns.holder}, ':', 1) not in (${sql.join((live.length ? live : [selfId]).map((id) => sql`${id}`), sql`, `)})`);
    const orphans = await tx
      .update(callReceipts)
      .set({
        state: CallState.Uncertain,
        result: sql`jsonb_build_object('schemaVersion', 1, 'outcome', 'uncertain', 'deliveryStage', 'uncertain', 'deliveryId', ${callReceipts.id}, 'tool', ${callReceipts.tool}, 'detail', 'the controller stopped while this call was in flight; it was not replayed — reconcile it', 'reconcileTool', 'reconcile_seat_call')`,
      })
      .where(and(eq(callReceipts.state, CallState.InFlight), sql`(${callReceipts.controllerInstance} is null or ${notInArray(callReceipts.controllerInstance, live)})`))
      .returning({ id: callReceipts.id });
    const ids = orphans.map((o) => o.id);
    if (ids.length === 0) return [];
    const dispatching = await tx
      .update(deliveryReceipts)
      .set({ state: ReceiptState.Uncertain, reason: "controller_stopped", detail: "the controller stopped while this delivery was in flight" })
      .where(and(inArray(deliveryReceipts.id, ids), eq(deliveryReceipts.state, ReceiptState.Dispatching)))
      .returning();
    for (const d of dispatching) await openFence(tx, d, now);
    return ids;
  });
  await db.delete(controllerInstances).where(and(lt(controllerInstances.heartbeatAt, sql`now() - make_interval(secs => ${(INSTANCE_DEAD_AFTER_MS * 10) / 1000})`)));
  return recovered;
}
