/**
 * reconcile_seat_call: reads the original receipt in its owning conversation and reports
 * what it proves. It never sends, hires or grants anything. For an unresolved delivery it
 * asks the seat's agent to read the session: the original found there is recorded as
 * delivered (evidence, not a send). `settle: "not_delivered"` abandons an unresolved
 * original as `abandoned-unknown` (ADR 0207, VUH-2358) — unless the session shows it, or the
 * receipt kept the native channel's exact acknowledgment of it (rule 21): then it is delivered.
 * A mailbox original its agent proves absent for good (mailbox-absence.ts) is recorded not sent.
 */
import { parseUuid } from "../../shared/ids.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { isUnresolved } from "../../shared/verdicts.js";
import { CallState, findCall } from "../journal/call-receipts.js";
import { deliveryIdByNativeId, findDelivery } from "../journal/delivery-receipts.js";
import type { PipelineDeps } from "./pipeline.js";
import { uncertainBody, type LeadBody, type ToolOutcome } from "./result-bodies.js";
import { sessionEvidence } from "./session-evidence.js";
import { settleAbandoned, settleFoundInSession, settleProvenAbsent } from "./settle.js";
import { proveMailboxAbsence } from "./mailbox-absence.js";
import { reconcileHire } from "../hire/reconcile-hire.js";
import { isQuestionAnswer, reconcileQuestionAnswer } from "../workers/question-reconcile.js";

export const RECONCILE_SEAT_CALL = "reconcile_seat_call";

export interface ReconcileInput {
  deliveryId?: string | undefined;
  hireId?: string | undefined;
  /** A harness's own id for the message (rule 30): Codex's clientId or turn, OpenCode's message id, a Pi entry id. */
  nativeId?: string | undefined;
  settle?: "not_delivered" | undefined;
}

export async function reconcileSeatCall(
  deps: PipelineDeps,
  conversationId: string,
  input: ReconcileInput,
): Promise<ToolOutcome> {
  const given = [input.deliveryId, input.hireId, input.nativeId].filter((x) => x !== undefined).length;
  if (given !== 1) throw new InvalidArgumentError("give exactly one of deliveryId, hireId or nativeId");
  if (input.nativeId !== undefined) {
    // Found only in this conversation: another's receipt answers like an unknown id (rule 7).
    const deliveryId = await deliveryIdByNativeId(deps.db, conversationId, input.nativeId);
    if (deliveryId === undefined) return noMatchingReceipt(input.nativeId, "message_seat");
    return reconcileSeatCall(deps, conversationId, { deliveryId, settle: input.settle });
  }
  // Canonical (lower case) before it is compared with the journal's ids (issue 32 item 4).
  const id = parseUuid(input.deliveryId !== undefined ? "deliveryId" : "hireId", (input.deliveryId ?? input.hireId)!);
  const tool = input.deliveryId !== undefined ? "message_seat" : "hire_agent";
  if (tool === "hire_agent") {
    if (input.settle)
      throw new InvalidArgumentError(
        "settle applies to deliveries; an unresolved hire is settled by the owner (clankie hire-receipt settle)",
      );
    return reconcileHire(deps, conversationId, id);
  }
  const noMatch = noMatchingReceipt(id, tool);

  const call = await findCall(deps.db, id, conversationId);
  if (!call || call.tool !== tool) return noMatch;
  const delivery = tool === "message_seat" ? await findDelivery(deps.db, id) : undefined;

  if (call.state === CallState.Settled && (!delivery || !isUnresolved(delivery.state))) {
    if (input.settle) {
      return {
        id,
        tool,
        state: "settled",
        isError: true,
        body: {
          schemaVersion: 1,
          outcome: "refused",
          reason: "already_settled",
          deliveryId: id,
          detail: `this receipt is already settled (${delivery?.state ?? "settled"}); nothing was changed`,
        },
      };
    }
    if (call.resultExpired || !call.result) {
      return {
        id,
        tool,
        state: "settled",
        isError: true,
        body: {
          schemaVersion: 1,
          outcome: "expired",
          deliveryId: id,
          detail: "this receipt was settled and its result body has expired; it is not replayed",
        },
      };
    }
    return { id, tool, state: "settled", isError: false, body: call.result as unknown as LeadBody };
  }
  // An uncertain question answer has no delivery receipt: the agent re-reads its native receipt (controller/workers/).
  if (!delivery && call.state === CallState.Uncertain && isQuestionAnswer(call))
    return reconcileQuestionAnswer(deps, conversationId, call);
  if (!delivery)
    return {
      id,
      tool,
      state: "uncertain",
      isError: true,
      body: (call.result as unknown as LeadBody | null) ?? uncertainBody(tool, id, "the original's outcome is unknown"),
    };
  if (call.state === CallState.InFlight && input.settle) {
    return {
      id,
      tool,
      state: "uncertain",
      isError: true,
      body: {
        schemaVersion: 1,
        outcome: "refused",
        reason: "receipt_in_use",
        deliveryId: id,
        detail: "this delivery is still in flight; it cannot be settled yet",
      },
    };
  }

  const evidence = await sessionEvidence(
    deps.db,
    deps.agents,
    delivery.seatId,
    id,
    delivery.createdAt.getTime(),
    delivery,
  );
  if (evidence.kind === "found") {
    const body = await settleFoundInSession(deps, delivery, evidence.nativeReceiptId);
    return { id, tool, state: "settled", isError: false, body };
  }
  // A mailbox read without the original, whose dispatching controller stopped: the agent, the only
  // writer left, may prove it never will be written (rule 30; ADR 0005). A call a live controller
  // gave up on stays that controller's uncertainty, settled as before.
  let unproven: string | undefined;
  if (evidence.kind === "absent" && call.state !== CallState.InFlight && delivery.reason === "controller_stopped") {
    const absence = await proveMailboxAbsence(deps.db, deps.agents, delivery.seatId, id, delivery.contentFingerprint);
    if (absence.kind === "found") {
      const body = await settleFoundInSession(deps, delivery, absence.nativeReceiptId);
      return { id, tool, state: "settled", isError: false, body };
    }
    if (absence.kind === "proven") {
      const dispatcher = { controllerInstance: call.controllerInstance, state: "stopped" };
      const body = await settleProvenAbsent(deps, delivery, conversationId, { ...absence.proof, dispatcher });
      // Settled by another path meanwhile: answer what the receipt now says.
      if (!body) return reconcileSeatCall(deps, conversationId, { deliveryId: id });
      return { id, tool, state: "settled", isError: false, body };
    }
    unproven = absence.detail;
  }
  // Rule 21: an exact native acknowledgment the receipt kept (a Claude channel's ack of our event id) is delivered, not abandoned.
  if (input.settle === "not_delivered" && delivery.nativeReceiptId) {
    const body = await settleFoundInSession(deps, delivery, delivery.nativeReceiptId, "acknowledgment");
    return { id, tool, state: "settled", isError: false, body };
  }
  if (input.settle === "not_delivered") {
    const body = await settleAbandoned(deps, delivery, "lead", conversationId, {
      session: evidence.kind,
      ...(evidence.kind === "unreadable" ? { sessionDetail: evidence.detail } : {}),
    });
    return { id, tool, state: "settled", isError: false, body };
  }
  const detail =
    evidence.kind === "absent"
      ? `the recipient's session was read and does not hold the original${unproven ? ` (${unproven})` : ""}; ` +
        "its fate is still unknown and it will not be resent"
      : `the recipient's session could not be read (${evidence.detail}); the original's fate is unknown and it will not be resent`;
  // A settled call whose native write stayed unconfirmed: the original result, with what the session showed.
  if (call.state === CallState.Settled && call.result)
    return {
      id,
      tool,
      state: "settled",
      isError: call.result.outcome !== "delivered",
      body: { ...(call.result as unknown as LeadBody), sessionCheck: detail } as LeadBody,
    };
  return {
    id,
    tool,
    state: "uncertain",
    isError: true,
    body: { ...uncertainBody(tool, id, detail), seat: delivery.seatId, receiptState: delivery.state },
  };
}

function noMatchingReceipt(id: string, tool: "message_seat" | "hire_agent"): ToolOutcome {
  return {
    id,
    tool,
    // No receipt: no seat-call _meta at all (a `settled` state would claim one exists).
    state: "none",
    isError: true,
    body: {
      schemaVersion: 1,
      outcome: "no_matching_receipt",
      detail: "no receipt with this id exists in this conversation; nothing was changed",
    },
  };
}
