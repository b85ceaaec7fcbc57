/**
 * The fence on the journal's writes (ADR 0036): every write made for a delivery names the instance
 * and the epoch of its lease, and the journal refuses it unless that lease is live by the database's
 * clock — inside the statement itself, or checked and held in the same transaction.
 */
import { and, eq, sql, type SQL } from "drizzle-orm";
import { controllerInstances } from "../db/schema.js";
import type { Tx } from "../db/open.js";
import { p } from "./statements.js";

/** Who makes a write: an instance and the epoch of the lease it held when the work began. */
export interface InstanceEpoch {
  instance: string;
  epoch: number;
}

/** A write refused because its instance's lease has expired or its epoch is stale (or its call was taken over). */
export class FencedWriteError extends Error {
  override readonly name = "FencedWriteError";
  constructor(
    readonly fence: InstanceEpoch,
    what: string,
  ) {
    super(
      `${what} was refused by the journal: controller instance ${fence.instance} no longer holds its lease with epoch ${fence.epoch}, or the call was taken over by a peer`,
    );
  }
}

export function isFencedWrite(e: unknown): e is FencedWriteError {
  return e instanceof FencedWriteError;
}

/** The guard of a prepared statement, inside the statement itself: `instance` and `epoch` are its placeholders. */
export function leaseHeldGuard(): SQL {
  return sql`exists (select 1 from controller_instances ci where ci.id = ${p("instance")}::text and ci.epoch = ${p("epoch")}::bigint and ci.lease_expires_at > now())`;
}

/** The same guard with bound values, for the query builder's cold paths. */
export function leaseHeld(f: InstanceEpoch): SQL {
  return sql`exists (select 1 from controller_instances ci where ci.id = ${f.instance} and ci.epoch = ${f.epoch}::bigint and ci.lease_expires_at > now())`;
}

/**
 * The check of a multi-statement transaction: the lease is live now, and stays locked (FOR KEY
 * SHARE) until commit, so a peer's takeover (which locks expired rows FOR UPDATE) waits for it.
 */
export async function assertLeaseHeld(tx: Tx, f: InstanceEpoch, what: string): Promise<void> {
  const rows = await tx
    .select({ id: controllerInstances.id })
    .from(controllerInstances)
    .where(
      and(
        eq(controllerInstances.id, f.instance),
        eq(controllerInstances.epoch, f.epoch),
        sql`${controllerInstances.leaseExpiresAt} > now()`,
      ),
    )
    .for("key share");
  if (rows.length === 0) throw new FencedWriteError(f, what);
}
