/**
 * An admission the journal committed only after its call had been refused for want of any
 * answer (controller/db/answer-deadline.ts: a stopped or unreachable database). Nothing was
 * or will be dispatched for it: its receipts are settled not-sent as soon as the result
 * arrives, and the seat lease it took is released in the same statement. Left alone, the
 * receipt would sit "dispatching" under a live controller, fencing its text, with its seat
 * held until the lease expired. A settle that fails too is kept and retried (unrecorded-outcomes.ts).
 */
import { ReceiptState } from "../../shared/verdicts.js";
import { contentFingerprint } from "../../shared/fingerprint.js";
import type { Admitted } from "../journal/admission.js";
import { CallState } from "../journal/call-receipts.js";
import { settleDispatched, type SettleParams } from "../journal/outcome.js";
import { MESSAGE_SEAT, leaseMsOf, type PipelineDeps } from "./pipeline.js";
import type { MessageSeatBody } from "./result-bodies.js";

export interface LateAdmission {
  id: string;
  conversationId: string;
  seatRef: string;
  message: string;
  holder: string;
}

export function settleLateAdmission(deps: PipelineDeps, call: LateAdmission, admitted: Admitted): void {
  if (!admitted.inserted) return;
  const detail = "the receipt journal answered only after this call had been refused for want of an answer; nothing was dispatched";
  const body: MessageSeatBody = { schemaVersion: 1, deliveryId: call.id, seat: call.seatRef, outcome: "undelivered", deliveryStage: "unavailable", reason: "journal_unavailable", detail };
  const params: SettleParams = {
    id: call.id,
    seatId: admitted.seat?.id ?? "",
    conversationId: call.conversationId,
    contentFingerprint: contentFingerprint(call.message),
    callState: CallState.Settled,
    body: body as unknown as Record<string, unknown>,
    outcome: { state: ReceiptState.NotSent, reason: "journal_unavailable", detail },
    previousIds: [],
    holder: admitted.leaseTaken ? call.holder : null,
    nextHolder: null,
    leaseSeconds: leaseMsOf(deps) / 1000,
    now: deps.now(),
  };
  deps.logger.warn("an admission committed after its call was refused; settling it not sent", { deliveryId: call.id, tool: MESSAGE_SEAT });
  settleDispatched(deps.db, params).then(
    () => deps.onJournalChange(),
    () => deps.unrecorded.add(`late admission ${call.id} (not_sent)`, params),
  );
}
