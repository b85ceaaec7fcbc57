/**
 * A message_seat admission the journal did not answer in time (controller/db/answer-deadline.ts:
 * a stopped or unreachable database). Its call is refused, and nothing was or will be dispatched
 * for it; but the admission statement may still commit whenever the database answers, and left
 * alone its receipt would sit "dispatching", fencing its text, with its seat held until the
 * lease expired — or, had this controller died first, boot recovery would have marked it
 * uncertain though its lead was told not sent. So the refusal itself is recorded by id
 * (journal/refused-admission.ts), in either order with the admission, through the unrecorded
 * outcomes: on disk before the lead hears it, retried until the journal takes it, and recorded
 * by the next boot before recovery if this process dies first. A late result hurries it along.
 */
import type { Admitted } from "../journal/admission.js";
import type { RefusedAdmission } from "../journal/refused-admission.js";
import { MESSAGE_SEAT, type PipelineDeps } from "./pipeline.js";
import type { MessageSeatBody } from "./result-bodies.js";

export interface UnansweredAdmission {
  id: string;
  conversationId: string;
  fingerprint: string;
  seatRef: string;
  holder: string;
}

export const UNANSWERED_DETAIL = "the receipt journal did not answer this call's admission in time, so it was refused; nothing was dispatched, and nothing will be for this id";

/** Keeps the refusal until the journal has it; call before the lead is answered. */
export function recordUnansweredRefusal(deps: PipelineDeps, call: UnansweredAdmission): void {
  const body: MessageSeatBody = { schemaVersion: 1, deliveryId: call.id, seat: call.seatRef, outcome: "undelivered", deliveryStage: "unavailable", reason: "journal_unavailable", detail: UNANSWERED_DETAIL };
  const refusal: RefusedAdmission = {
    kind: "refused_admission",
    id: call.id,
    tool: MESSAGE_SEAT,
    conversationId: call.conversationId,
    fingerprint: call.fingerprint,
    controllerInstance: deps.instanceId,
    body: body as unknown as Record<string, unknown>,
    reason: "journal_unavailable",
    detail: UNANSWERED_DETAIL,
    holder: call.holder,
    now: deps.now(),
  };
  deps.unrecorded.add(`refused admission ${call.id} (not_sent)`, refusal);
}

/** The refused admission's result came after all: the database answers again, so record the refusal now. */
export function onLateAdmission(deps: PipelineDeps, call: { id: string }, admitted: Admitted): void {
  if (admitted.inserted) deps.logger.warn("an admission committed after its call was refused; settling it not sent", { deliveryId: call.id, tool: MESSAGE_SEAT });
  void deps.unrecorded.flush().then(() => deps.onJournalChange());
}
