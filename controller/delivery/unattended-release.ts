/**
 * The unattended release (ADR 0207, VUH-2358): an original unresolved for five minutes
 * stops fencing once its recipient is idle and its exact session was read in full without
 * it; it is kept as abandoned-unknown evidence, never resent. Found in the session, it is
 * recorded as delivered, as is one whose receipt kept the channel's exact acknowledgment
 * (rule 21). A busy seat or an unreadable session keeps the fence.
 */
import { findDelivery } from "../journal/delivery-receipts.js";
import { openFencesOlderThan } from "../journal/fences.js";
import { sessionEvidence } from "./session-evidence.js";
import type { PipelineDeps } from "./pipeline.js";
import { settleAbandoned, settleFoundInSession } from "./settle.js";

export const UNATTENDED_RELEASE_AFTER_MS = 5 * 60 * 1000;

export async function releaseStaleFences(deps: PipelineDeps, seat: { id: string }): Promise<void> {
  const now = deps.now();
  const stale = await openFencesOlderThan(deps.db, seat.id, new Date(now.getTime() - UNATTENDED_RELEASE_AFTER_MS));
  for (const fence of stale) {
    const delivery = await findDelivery(deps.db, fence.deliveryId);
    if (!delivery) continue;
    const evidence = await sessionEvidence(deps.db, deps.agents, seat.id, delivery.id, delivery.createdAt.getTime(), delivery);
    if (evidence.kind === "found") {
      await settleFoundInSession(deps, delivery, evidence.nativeReceiptId);
    } else if (delivery.nativeReceiptId) {
      // The channel acknowledged the exact id (rule 21): that is never abandoned as unknown.
      await settleFoundInSession(deps, delivery, delivery.nativeReceiptId, "acknowledgment");
    } else if (evidence.kind === "absent" && evidence.status === "idle") {
      await settleAbandoned(deps, delivery, "unattended", null, { session: "read in full without the original", seatStatus: evidence.status, openedAt: fence.openedAt.toISOString() });
      deps.logger.info("unattended release", { deliveryId: delivery.id, seat: seat.id });
    }
  }
}
