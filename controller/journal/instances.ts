/**
 * Controller instances on this journal and their leases (ADR 0036). Each instance holds a lease
 * row renewed every few seconds; expiry is judged by the database's clock (now()), never by a
 * process id, a host name or a local clock. An in-flight call whose instance's lease expired (or
 * whose epoch is stale) is an orphan: its receipt becomes uncertain (never replayed) and its
 * delivery gets a fence, so only a settle path frees it (scenario 2). Every write made for a
 * delivery names (instance, epoch) and is refused unless that lease is live: the guards are here.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import { callReceipts, controllerInstances, deliveryReceipts } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { CallState } from "./call-receipts.js";
import { openFence } from "./fences.js";
import type { InstanceEpoch } from "./lease-guard.js";

export {
  FencedWriteError,
  assertLeaseHeld,
  isFencedWrite,
  leaseHeld,
  leaseHeldGuard,
  type InstanceEpoch,
} from "./lease-guard.js";

/** How long a lease lasts past its last renewal, and how often it is renewed (ADR 0036). */
export const DEFAULT_INSTANCE_LEASE_MS = 10_000;
export const DEFAULT_INSTANCE_RENEW_MS = 2_000;
/** An instance row expired this long is deleted (its calls were taken over long before). */
const FORGET_AFTER_S = 300;

const leaseEnd = (leaseMs: number) => sql`now() + make_interval(secs => ${leaseMs / 1000}::float8)`;

/** Registers (or re-registers) the instance with a new epoch and a fresh lease; returns the epoch. */
export async function registerInstance(
  db: Db,
  id: string,
  pid: number,
  host: string,
  leaseMs = DEFAULT_INSTANCE_LEASE_MS,
): Promise<number> {
  const [row] = await db
    .insert(controllerInstances)
    .values({ id, pid, host, leaseExpiresAt: leaseEnd(leaseMs) })
    .onConflictDoUpdate({
      target: controllerInstances.id,
      set: {
        epoch: sql`excluded.epoch`,
        leaseExpiresAt: sql`excluded.lease_expires_at`,
        heartbeatAt: sql`now()`,
        pid,
        host,
      },
    })
    .returning({ epoch: controllerInstances.epoch });
  return Number(row!.epoch);
}

/**
 * Whether `recoverOrphans` has anything to do: a seat lease or an in-flight call of an instance whose
 * lease is not live, or an instance row to forget. At idle the renewal asks this in its own statement,
 * and the takeover's transaction (six round trips) runs only when it is true.
 */
const takeoverDue = sql`(
  exists (select 1 from seat_turns st where not exists (select 1 from controller_instances ci where ci.id = split_part(st.holder, ':', 1) and ci.lease_expires_at > now()))
  or exists (select 1 from operator_call_receipts c where c.state = ${CallState.InFlight} and not exists (select 1 from controller_instances ci where ci.id = c.controller_instance and ci.epoch = c.controller_epoch and ci.lease_expires_at > now()))
  or exists (select 1 from controller_instances ci where ci.lease_expires_at < now() - make_interval(secs => ${FORGET_AFTER_S}::float8))
)`;

/**
 * Renews the lease. `renewed` is false when it had expired (or the epoch is stale): it is lost and must
 * be re-acquired. `takeoverDue`: whether a peer's work waits to be taken over (recoverOrphans).
 */
export async function renewLease(
  db: Db,
  f: InstanceEpoch,
  leaseMs = DEFAULT_INSTANCE_LEASE_MS,
): Promise<{ renewed: boolean; takeoverDue: boolean }> {
  const rows = await db
    .update(controllerInstances)
    .set({ leaseExpiresAt: leaseEnd(leaseMs), heartbeatAt: sql`now()` })
    .where(
      and(
        eq(controllerInstances.id, f.instance),
        eq(controllerInstances.epoch, f.epoch),
        sql`${controllerInstances.leaseExpiresAt} > now()`,
      ),
    )
    .returning({ due: sql<boolean>`${takeoverDue}` });
  return { renewed: rows.length === 1, takeoverDue: rows.length === 1 && rows[0]!.due === true };
}

export async function removeInstance(db: Db, f: InstanceEpoch): Promise<void> {
  await db
    .delete(controllerInstances)
    .where(and(eq(controllerInstances.id, f.instance), eq(controllerInstances.epoch, f.epoch)));
}

/** The seat leases this instance took under earlier epochs: freed when it re-acquires, before it serves again. */
export async function releaseOwnSeatLeases(db: Db, instance: string): Promise<void> {
  await db.execute(sql`delete from seat_turns where split_part(holder, ':', 1) = ${instance}`);
}

/**
 * Marks the in-flight calls of instances whose lease expired (or whose epoch is stale) uncertain,
 * and frees their seat leases. `onlyLiveIsSelf` is true for the embedded database, which only one
 * process can open: every other instance is dead.
 */
export async function recoverOrphans(
  db: Db,
  self: InstanceEpoch,
  onlyLiveIsSelf: boolean,
  now: Date,
): Promise<string[]> {
  const live = onlyLiveIsSelf
    ? sql`ci.id = ${self.instance} and ci.epoch = ${self.epoch}::bigint`
    : sql`ci.lease_expires_at > now()`;
  return db.transaction(async (tx) => {
    // Expired rows first, FOR UPDATE: a write that checked its lease in its own transaction commits before this looks.
    if (!onlyLiveIsSelf)
      await tx
        .select({ id: controllerInstances.id })
        .from(controllerInstances)
        .where(sql`${controllerInstances.leaseExpiresAt} <= now()`)
        .orderBy(controllerInstances.id)
        .for("update");
    // A dead instance's seat leases are freed at once: its deliveries will never settle them.
    await tx.execute(
      sql`delete from seat_turns st where not exists (select 1 from controller_instances ci where ci.id = split_part(st.holder, ':', 1) and ${live})`,
    );
    // The epoch is cleared as the call is taken over: its old owner's settle no longer matches it.
    const orphans = await tx
      .update(callReceipts)
      .set({
        state: CallState.Uncertain,
        controllerEpoch: null,
        result: sql`jsonb_build_object('schemaVersion', 1, 'outcome', 'uncertain', 'deliveryStage', 'uncertain', 'deliveryId', ${callReceipts.id}, 'tool', ${callReceipts.tool}, 'detail', 'the controller instance that admitted this call lost its lease (it stopped, or paused past it) while the call was in flight; it was not replayed — reconcile it', 'reconcileTool', 'reconcile_seat_call')`,
      })
      .where(
        and(
          eq(callReceipts.state, CallState.InFlight),
          sql`not exists (select 1 from controller_instances ci where ci.id = ${callReceipts.controllerInstance} and ci.epoch = ${callReceipts.controllerEpoch} and ${live})`,
        ),
      )
      .returning({ id: callReceipts.id });
    const ids = orphans.map((o) => o.id);
    if (ids.length) {
      const dispatching = await tx
        .update(deliveryReceipts)
        .set({
          state: ReceiptState.Uncertain,
          reason: "controller_stopped",
          detail: "the controller instance lost its lease while this delivery was in flight",
        })
        .where(and(inArray(deliveryReceipts.id, ids), eq(deliveryReceipts.state, ReceiptState.Dispatching)))
        .returning();
      for (const d of dispatching) await openFence(tx, d, now);
    }
    await tx
      .delete(controllerInstances)
      .where(sql`${controllerInstances.leaseExpiresAt} < now() - make_interval(secs => ${FORGET_AFTER_S}::float8)`);
    return ids;
  });
}
