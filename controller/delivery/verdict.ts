/**
 * message_seat, the verdict: the agent's DeliverResponse read once, into the lead's body and the
 * receipt's outcome. A harness's own stage is kept only where it agrees with the result, and an
 * unknown result is unconfirmed, never delivered.
 */
import type { DeliverResponse } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { AgentResult, ReceiptState, agentResultWire } from "../../shared/verdicts.js";
import type { DeliveryOutcome } from "../journal/delivery-receipts.js";
import type { BodyBase } from "./receipt-types.js";
import type { MessageSeatBody } from "./result-bodies.js";

/** The agent's answer, read once: the lead's body and the receipt's outcome. */
export function readVerdict(base: BodyBase, res: DeliverResponse): { body: MessageSeatBody; outcome: DeliveryOutcome } {
  return { body: bodyFromAgent(base, res), outcome: outcomeFromAgent(res) };
}

/** The lead's body for the agent's DeliverResponse. */
export function bodyFromAgent(base: BodyBase, res: DeliverResponse): MessageSeatBody {
  const result = agentResultWire.decode(res.result);
  const evidence = {
    detail: res.detail,
    ...(res.reason ? { reason: res.reason } : {}),
    ...(res.nativeReceiptId ? { nativeReceiptId: res.nativeReceiptId } : {}),
    proofAgeMs: res.proofAgeMs,
    proofs: res.proofs.map((p) => ({
      kind: p.kind,
      outcome: p.outcome,
      detail: p.detail,
      ageAtWriteMs: p.ageAtWriteMs,
    })),
  };
  // A harness's own stage (OpenCode, rule 41) is taken only where it agrees with the result.
  const admitted = res.deliveryStage === "stored" || res.deliveryStage === "consumed" ? res.deliveryStage : "delivered";
  switch (result) {
    case AgentResult.Delivered:
      return { ...base, outcome: "delivered", deliveryStage: admitted, ...evidence };
    case AgentResult.Queued:
      return {
        ...base,
        outcome: "delivered",
        deliveryStage: admitted,
        state: "queued",
        status: "queued_until_turn_end",
        ...evidence,
      };
    case AgentResult.Steered:
      return { ...base, outcome: "delivered", deliveryStage: admitted, state: "steered", ...evidence };
    case AgentResult.Started:
      return { ...base, outcome: "delivered", deliveryStage: admitted, state: "started", ...evidence };
    case AgentResult.Unconfirmed:
      return { ...base, outcome: "unconfirmed", deliveryStage: "uncertain", ...evidence };
    case AgentResult.Rejected:
      return { ...base, outcome: "undelivered", deliveryStage: "rejected", ...evidence };
    case AgentResult.NotSent:
      return { ...base, outcome: "undelivered", deliveryStage: "unavailable", ...evidence };
    default:
      return {
        ...base,
        outcome: "unconfirmed",
        deliveryStage: "uncertain",
        ...evidence,
        detail: `the agent answered with an unknown result ${res.result}; treated as unconfirmed`,
      };
  }
}

const STATE_OF: Record<AgentResult, ReceiptState> = {
  delivered: ReceiptState.Delivered,
  queued: ReceiptState.Queued,
  steered: ReceiptState.Steered,
  started: ReceiptState.Started,
  not_sent: ReceiptState.NotSent,
  rejected: ReceiptState.Rejected,
  unconfirmed: ReceiptState.Unconfirmed,
};

export function outcomeFromAgent(res: DeliverResponse): DeliveryOutcome {
  const result = agentResultWire.decode(res.result) ?? AgentResult.Unconfirmed;
  return {
    state: STATE_OF[result],
    reason: res.reason || undefined,
    detail: res.detail,
    nativeReceiptId: res.nativeReceiptId || undefined,
    nativeMessageId: res.nativeMessageId || undefined,
    nativeSessionPath: res.nativeSessionPath || undefined,
    proofAgeMs: res.proofAgeMs,
    proofs: res.proofs.map((p) => ({
      kind: p.kind,
      outcome: p.outcome,
      detail: p.detail,
      ageAtWriteMs: p.ageAtWriteMs,
    })),
  };
}
