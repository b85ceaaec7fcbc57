/**
 * The unattended release (ADR 0207, VUH-2358): an original unresolved for five minutes
 * stops fencing once its recipient is idle and its exact session was read in full without
 * it; it is kept as abandoned-unknown evidence, never resent. Found in the session, it is
 * recorded as delivered. A busy seat or an unreadable session keeps the fence.
 */
import type { SeatRowDb } from "../db/schema.js";
import { findDelivery } from "../journal/delivery-receipts.js";
import { openFencesOlderThan } from "../journal/fences.js";
import { abandonDelivery, recordFoundInSession } from "../journal/settle.js";
import { sessionEvidence } from "./session-evidence.js";
import type { PipelineDeps } from "./message-seat.js";

export const UNATTENDED_RELEASE_AFTER_MS = 5 * 60 * 1000;

export async function releaseStaleFences(deps: PipelineDeps, seat: SeatRowDb): Promise<void> {
  const now = deps.now();
  const stale = await openFencesOlderThan(deps.db, seat.id, new Date(now.getTime() - UNATTENDED_RELEASE_AFTER_MS));
  for (const fence of stale) {
    const delivery = await findDelivery(deps.db, fence.deliveryId);
    if (!delivery) continue;
    const evidence = await sessionEvidence(deps.db, deps.agents, seat.id, delivery.id, delivery.createdAt.getTime());
    if (evidence.kind === "found") {
      await recordFoundInSession(deps.db, delivery, evidence.nativeReceiptId, now);
    } else if (evidence.kind === "absent" && evidence.status === "idle") {
      await abandonDelivery(deps.db, { delivery, settledBy: "unattended", conversationId: null, evidence: { session: "read in full without the original", seatStatus: evidence.status, openedAt: fence.openedAt.toISOString() }, now });
      deps.logger.info("unattended release", { deliveryId: delivery.id, seat: seat.id });
    }
  }
  if (stale.length) deps.onJournalChange();
}
