/**
 * The owner's `clankie seat-delivery settle ID abandoned-unknown [--conversation C]`
 * (ADR 0207, VUH-1779): settles one unresolved delivery of that conversation. Unknown ids,
 * other conversations' ids, settled ids and ids still in flight are refused; nothing is
 * ever resent. An original the seat's session holds is recorded as delivered instead.
 */
import { eq } from "drizzle-orm";
import { ErrorCode, FleetError, InvalidArgumentError } from "../../shared/errors.js";
import { parseUuid } from "../../shared/ids.js";
import { quoteInput } from "../../shared/public-text.js";
import { ReceiptState, isUnresolved } from "../../shared/verdicts.js";
import { callReceipts } from "../db/schema.js";
import { CallState } from "../journal/call-receipts.js";
import { findDelivery } from "../journal/delivery-receipts.js";
import type { PipelineDeps } from "./pipeline.js";
import { sessionEvidence } from "./session-evidence.js";
import { settleAbandoned, settleFoundInSession } from "./settle.js";

export async function ownerSettle(
  deps: PipelineDeps,
  givenId: string,
  conversationId: string,
  disposition: string,
): Promise<{ state: string; detail: string }> {
  if (disposition !== ReceiptState.AbandonedUnknown)
    throw new InvalidArgumentError(`the only owner disposition is abandoned-unknown, got ${quoteInput(disposition)}`);
  const deliveryId = parseUuid("the delivery id", givenId);
  const delivery = await findDelivery(deps.db, deliveryId);
  if (!delivery || delivery.conversationId !== conversationId) {
    throw new FleetError(
      ErrorCode.NotFound,
      `refused: no delivery ${deliveryId} in conversation ${quoteInput(conversationId)}; nothing was changed`,
    );
  }
  if (!isUnresolved(delivery.state)) {
    throw new FleetError(
      ErrorCode.ReceiptConflict,
      `refused: delivery ${deliveryId} is already ${delivery.state}; nothing was changed`,
    );
  }
  const [call] = await deps.db.select().from(callReceipts).where(eq(callReceipts.id, deliveryId));
  if (call?.state === CallState.InFlight) {
    throw new FleetError(
      ErrorCode.ReceiptInUse,
      `refused: delivery ${deliveryId} is still in flight; wait for its outcome`,
    );
  }
  const evidence = await sessionEvidence(
    deps.db,
    deps.agents,
    delivery.seatId,
    deliveryId,
    delivery.createdAt.getTime(),
    delivery,
  );
  if (evidence.kind === "found") {
    await settleFoundInSession(deps, delivery, evidence.nativeReceiptId);
    return {
      state: ReceiptState.Delivered,
      detail: "the seat's session holds the original; recorded as delivered, not abandoned",
    };
  }
  await settleAbandoned(deps, delivery, "owner", conversationId, {
    session: evidence.kind,
    ...(evidence.kind === "unreadable" ? { sessionDetail: evidence.detail } : {}),
  });
  return {
    state: ReceiptState.AbandonedUnknown,
    detail: "kept as abandoned-unknown evidence; the original id and content stay refused; nothing was resent",
  };
}
