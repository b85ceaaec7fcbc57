/**
 * Operator call receipts (ADR 0207, VUH-1638): one row per message_seat / hire_agent id,
 * written before any native effect and bound to its conversation and request
 * fingerprint. A repeated id never dispatches again.
 */
import { and, desc, eq, lt, sql } from "drizzle-orm";
import { callReceipts, type CallReceipt } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";
import { FencedWriteError, assertLeaseHeld, leaseHeld, type InstanceEpoch } from "./lease-guard.js";

export const CallState = { InFlight: "in_flight", Uncertain: "uncertain", Settled: "settled" } as const;
export type CallState = (typeof CallState)[keyof typeof CallState];

/** How many settled result bodies are kept; older ones answer `expired`. */
export const RETAINED_RESULT_BODIES = 1000;

export type Admission =
  | { kind: "admitted" }
  | { kind: "repeat"; receipt: CallReceipt }
  | { kind: "in_use"; receipt: CallReceipt }
  | { kind: "conflict"; detail: string }
  /** The id is another conversation's: refused, and answered as an unknown id would be (rule 7; issue 32 item 7). */
  | { kind: "foreign" };

export interface CallKey {
  id: string;
  tool: string;
  conversationId: string;
  fingerprint: string;
  /** The controller process admitting the call (for orphan recovery). */
  controllerInstance?: string | undefined;
  /** Its lease epoch: the admission is refused unless that lease is live, and the call is that epoch's to settle (ADR 0036). */
  fence?: InstanceEpoch | undefined;
}

/** Admit a call inside the caller's transaction: insert it, or explain why it is not new. */
export async function admitCall(tx: Tx, key: CallKey): Promise<Admission> {
  if (key.fence) await assertLeaseHeld(tx, key.fence, `the admission of ${key.id}`);
  const inserted = await tx
    .insert(callReceipts)
    .values({
      id: key.id,
      tool: key.tool,
      conversationId: key.conversationId,
      fingerprint: key.fingerprint,
      state: CallState.InFlight,
      controllerInstance: key.fence?.instance ?? key.controllerInstance ?? null,
      controllerEpoch: key.fence?.epoch ?? null,
    })
    .onConflictDoNothing()
    .returning({ id: callReceipts.id });
  if (inserted.length === 1) return { kind: "admitted" };
  const [existing] = await tx.select().from(callReceipts).where(eq(callReceipts.id, key.id)).for("update");
  if (!existing)
    return { kind: "conflict", detail: "the id vanished while it was being admitted; nothing was dispatched" };
  if (existing.conversationId !== key.conversationId) return { kind: "foreign" };
  if (existing.tool !== key.tool || existing.fingerprint !== key.fingerprint) {
    return { kind: "conflict", detail: "this id was used for a different request; nothing was dispatched" };
  }
  if (existing.state === CallState.InFlight) return { kind: "in_use", receipt: existing };
  return { kind: "repeat", receipt: existing };
}

/**
 * Why an id that was not inserted is not new (cold path: a repeat, a conflict, or a call still
 * in flight), read under a row lock so a concurrent admission of the same id has committed.
 */
export async function existingCall(db: Db, key: CallKey): Promise<Exclude<Admission, { kind: "admitted" }>> {
  return db.transaction(async (tx) => {
    const [existing] = await tx.select().from(callReceipts).where(eq(callReceipts.id, key.id)).for("update");
    if (!existing)
      return {
        kind: "conflict",
        detail: "the id vanished while it was being admitted; nothing was dispatched",
      } as const;
    if (existing.conversationId !== key.conversationId) return { kind: "foreign" } as const;
    if (existing.tool !== key.tool || existing.fingerprint !== key.fingerprint)
      return { kind: "conflict", detail: "this id was used for a different request; nothing was dispatched" } as const;
    if (existing.state === CallState.InFlight) return { kind: "in_use", receipt: existing } as const;
    return { kind: "repeat", receipt: existing } as const;
  });
}

/**
 * Settles a call. With `fence`, only while the call is still `owner`'s (a peer's takeover clears its
 * epoch) and, when given, `writer`'s lease is live (ADR 0036); else a FencedWriteError, nothing written.
 * A transaction that already holds the writer's lease (assertLeaseHeld) passes the owner alone.
 */
export async function settleCall(
  db: Db | Tx,
  id: string,
  state: Exclude<CallState, "in_flight">,
  result: Record<string, unknown>,
  now: Date,
  fence?: { owner: InstanceEpoch; writer?: InstanceEpoch },
): Promise<void> {
  const owned = fence
    ? and(
        eq(callReceipts.controllerInstance, fence.owner.instance),
        eq(callReceipts.controllerEpoch, fence.owner.epoch),
        fence.writer ? leaseHeld(fence.writer) : undefined,
      )
    : undefined;
  const rows = await db
    .update(callReceipts)
    .set({ state, result, settledAt: state === CallState.Settled ? now : null })
    .where(and(eq(callReceipts.id, id), owned))
    .returning({ id: callReceipts.id });
  if (fence && rows.length === 0) throw new FencedWriteError(fence.writer ?? fence.owner, `the settle of ${id}`);
}

/** A call receipt by id alone: the answer of a call whose own settle was refused (its conversation is the caller's). */
export async function findCallById(db: Db, id: string): Promise<CallReceipt | undefined> {
  const [row] = await db.select().from(callReceipts).where(eq(callReceipts.id, id));
  return row;
}

/** A receipt in its owning conversation, or undefined: other conversations never see it. */
export async function findCall(db: Db, id: string, conversationId: string): Promise<CallReceipt | undefined> {
  const [row] = await db
    .select()
    .from(callReceipts)
    .where(and(eq(callReceipts.id, id), eq(callReceipts.conversationId, conversationId)));
  return row;
}

/**
 * Drop the bodies of settled results beyond the newest RETAINED_RESULT_BODIES. The row
 * (id, scope, fingerprint) stays as a tombstone; uncertain receipts are never touched.
 */
export async function expireOldResults(db: Db): Promise<number> {
  const boundary = await db
    .select({ settledAt: callReceipts.settledAt })
    .from(callReceipts)
    .where(eq(callReceipts.state, CallState.Settled))
    .orderBy(desc(callReceipts.settledAt))
    .offset(RETAINED_RESULT_BODIES - 1)
    .limit(1);
  const cutoff = boundary[0]?.settledAt;
  if (!cutoff) return 0;
  const expired = await db
    .update(callReceipts)
    .set({ result: null, resultExpired: true })
    .where(
      and(
        eq(callReceipts.state, CallState.Settled),
        eq(callReceipts.resultExpired, false),
        lt(callReceipts.settledAt, cutoff),
      ),
    )
    .returning({ id: callReceipts.id });
  return expired.length;
}

export async function countCalls(db: Db): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(callReceipts);
  return row?.n ?? 0;
}
