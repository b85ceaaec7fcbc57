/**
 * message_seat, the entry: the edge checks, then admission (admit.ts) in one statement before any effect:
 * the operator call receipt (a repeated id returns the original and never dispatches again),
 * the delivery receipt in "dispatching" and, when the seat is free, its lease. Calls of one
 * conversation are admitted one after another, so deliveries to a seat take their turns in
 * the order the controller received them. Then the turn (turn.ts) and dispatch (dispatch.ts) do the rest.
 */
import { callFingerprint } from "../../shared/fingerprint.js";
import { assertSeatRef, canonicalRef, newDeliveryId, parseUuid } from "../../shared/ids.js";
import { assertJournalText, assertWellFormedText } from "../../shared/well-formed-text.js";
import { ServiceStoppingError } from "../../shared/errors.js";
import { journalFailure } from "../db/error-text.js";
import type { DeliveryMode } from "../../shared/verdicts.js";
import { CallState, existingCall, settleCall } from "../journal/call-receipts.js";
import { MESSAGE_SEAT, type CallScope, type MessageSeatInput, type PipelineDeps } from "./pipeline.js";
import type { MessageSeatBody, ToolOutcome } from "./result-bodies.js";
import { dispatchInTurn } from "./dispatch.js";
import { admitInOrder } from "./admit.js";
import { admittedHere, replayAdmission } from "./replay.js";
import { answerAsRecorded } from "./settle.js";
import { isFencedWrite } from "../journal/instances.js";
import { leaseLostRefusal } from "../fleet/instance-lease.js";

export async function messageSeat(deps: PipelineDeps, scope: CallScope, given: MessageSeatInput): Promise<ToolOutcome> {
  if (deps.isStopping()) throw new ServiceStoppingError();
  // A replica that lost its lease serves nothing until it has re-registered with a new epoch (ADR 0036).
  if (!deps.lease.isServing()) throw leaseLostRefusal("admitted or sent");
  // The edge (issue 32 items 4, 7): ids in their canonical case before the fingerprint, the
  // journal or a file name sees them; a seat or a text the journal or the write would change is refused here.
  const id = parseUuid(`_meta["clankie/seat-call"].deliveryId`, scope.deliveryId ?? newDeliveryId());
  assertSeatRef("seat", given.seat);
  assertWellFormedText("message", given.message);
  if (given.inReplyTo !== undefined) assertJournalText("inReplyTo", given.inReplyTo);
  const input: MessageSeatInput =
    given.inReplyTo === undefined ? given : { ...given, inReplyTo: canonicalRef(given.inReplyTo) };
  const mode: DeliveryMode = input.delivery ?? "auto";
  const fingerprint = callFingerprint(MESSAGE_SEAT, input);
  const holder = `${deps.instanceId}:${id}`;
  const { admitted, entered, fence } = await admitInOrder(deps, {
    id,
    conversationId: scope.conversationId,
    fingerprint,
    input,
    mode,
    holder,
  });
  deps.onJournalChange();

  if (!admitted.inserted) {
    const existing = await existingCall(deps.db, {
      id,
      tool: MESSAGE_SEAT,
      conversationId: scope.conversationId,
      fingerprint,
    }).catch((e: Error) => {
      deps.logger.warn("journal read failed", { deliveryId: id, error: e.message });
      throw journalFailure(e, "the receipt journal could not be read");
    });
    return replayAdmission(MESSAGE_SEAT, id, existing);
  }
  const base = { schemaVersion: 1 as const, deliveryId: id, seat: input.seat };
  if (admitted.seatsMatched !== 1 || !admitted.seat?.machine) {
    const body: MessageSeatBody =
      admitted.seatsMatched === 1
        ? {
            ...base,
            outcome: "undelivered",
            deliveryStage: "unavailable",
            reason: "seat_gone",
            detail: `the machine of ${input.seat} is no longer registered; nothing was sent`,
          }
        : {
            ...base,
            outcome: "unknown_seat",
            deliveryStage: "rejected",
            reason: admitted.seatsMatched === 0 ? "unknown_seat" : "ambiguous_seat",
            detail:
              admitted.seatsMatched === 0
                ? `no seat is named ${input.seat}; nothing was sent`
                : `${admitted.seatsMatched} seats are named ${input.seat}; use machine/name; nothing was sent`,
          };
    const refused = await settleCall(
      deps.db,
      id,
      CallState.Settled,
      body as unknown as Record<string, unknown>,
      deps.now(),
      { owner: fence, writer: fence },
    )
      .then(() => false)
      .catch((e: Error) => {
        if (isFencedWrite(e)) return true;
        deps.logger.warn("journal settle failed", { deliveryId: id, error: e.message });
        throw journalFailure(e, "the receipt journal could not be written");
      })
      .finally(() => admittedHere(deps).delete(id));
    if (refused) return answerAsRecorded(deps, id, `its outcome (${body.outcome}, nothing was sent) was not recorded`);
    return { id, tool: MESSAGE_SEAT, state: "settled", body, isError: false };
  }
  const dispatched = dispatchInTurn(deps, {
    conversationId: scope.conversationId,
    id,
    mode,
    input,
    admitted,
    holder,
    entered: entered!,
    senderRecheck: scope.senderRecheck,
    fence,
  }).finally(() => admittedHere(deps).delete(id));
  return deps.track(dispatched);
}
