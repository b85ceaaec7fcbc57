/**
 * The settle of one hire: the hire receipt's state and seat, and the call receipt with its
 * lead-facing body, in one transaction. Plain data in, so a settle the journal cannot take
 * is kept and retried (and spilled to disk) like a dispatch's (delivery/unrecorded-outcomes.ts).
 */
import { eq, sql } from "drizzle-orm";
import type { HireBody } from "../../shared/delivery-bodies.js";
import type { Db } from "../db/open.js";
import { hireReceipts } from "../db/schema.js";
import { CallState, settleCall } from "./call-receipts.js";
import { assertLeaseHeld, type InstanceEpoch } from "./lease-guard.js";

export interface HireSettleParams {
  kind: "hire";
  id: string;
  /** The hire receipt's new state (controller/hire/bodies.ts HireState). */
  state: string;
  /** Unresolved (start_unconfirmed, delivery_unconfirmed): the call stays uncertain and the receipt unsettled. */
  unresolved: boolean;
  body: HireBody;
  now: Date;
  /**
   * The agent itself answered that the launch committed (rule 53): irreversible, kept in the
   * receipt's evidence, so a host journal reset later can never make the hire not-launched.
   */
  launchCommittedByAgent?: boolean;
  /**
   * The (instance, epoch) that admitted the hire (ADR 0036): the settle of a launch applies only while
   * the call is still theirs. Absent for the settle of an unresolved hire (reconcile), which no epoch owns.
   */
  fence?: InstanceEpoch | undefined;
}

/**
 * `writer`: the admitting instance, or at boot the one replaying a stopped instance's decided outcome.
 * The call receipt goes first, fenced: a hire a peer took over (or a writer whose lease is not live)
 * writes nothing, the hire receipt included, and throws FencedWriteError.
 */
export async function settleHireOutcome(
  db: Db,
  s: HireSettleParams,
  writer: InstanceEpoch | undefined = s.fence,
): Promise<void> {
  await db.transaction(async (tx) => {
    if (writer) await assertLeaseHeld(tx, writer, `the settle of hire ${s.id}`);
    await settleCall(
      tx,
      s.id,
      s.unresolved ? CallState.Uncertain : CallState.Settled,
      s.body,
      s.now,
      s.fence && { owner: s.fence },
    );
    await tx
      .update(hireReceipts)
      .set({
        state: s.state,
        reason: s.body.reason ?? null,
        seatId: s.body.seat ?? null,
        occupantId: s.body.occupantId ?? null,
        paneId: s.body.paneId ?? null,
        updatedAt: s.now,
        settledAt: s.unresolved ? null : s.now,
        ...(s.launchCommittedByAgent
          ? { evidence: sql`coalesce(${hireReceipts.evidence}, '{}'::jsonb) || '{"launchCommitted": true}'::jsonb` }
          : {}),
      })
      .where(eq(hireReceipts.id, s.id));
  });
}
