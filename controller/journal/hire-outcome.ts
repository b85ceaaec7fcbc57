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
}

export async function settleHireOutcome(db: Db, s: HireSettleParams): Promise<void> {
  await db.transaction(async (tx) => {
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
        ...(s.launchCommittedByAgent ? { evidence: sql`coalesce(${hireReceipts.evidence}, '{}'::jsonb) || '{"launchCommitted": true}'::jsonb` } : {}),
      })
      .where(eq(hireReceipts.id, s.id));
    await settleCall(tx, s.id, s.unresolved ? CallState.Uncertain : CallState.Settled, s.body, s.now);
  });
}
