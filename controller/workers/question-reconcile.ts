/**
 * reconcile_seat_call({deliveryId}) of an UNCERTAIN question answer (issue 13 part 4, rule 39;
 * ADR 0050): the agent is asked to re-read the native receipt of that question's claim
 * (`AnswerQuestion{reconcile_only}`), which sends nothing. What the receipt proves — delivered,
 * the owner's answer (unconfirmed), or no claim ever taken (not sent) — settles the call
 * receipt; anything less leaves it uncertain, as it was. Never a second answer.
 */
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { AnswerQuestionRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import type { CallReceipt } from "../db/schema.js";
import { machines, seats } from "../db/schema.js";
import { CallState, settleCall } from "../journal/call-receipts.js";
import type { LeadBody, ToolOutcome } from "../delivery/result-bodies.js";
import { bodyFromAgent, type AnswerBody, type QuestionAnswerDeps } from "./question-answer.js";

/** A message_seat call receipt that answered a worker's question (its body names the requestId). */
export function isQuestionAnswer(call: CallReceipt): boolean {
  return call.tool === "message_seat" && typeof (call.result as { requestId?: unknown } | null)?.requestId === "string";
}

export async function reconcileQuestionAnswer(
  deps: Pick<QuestionAnswerDeps, "db" | "agents" | "now" | "onJournalChange" | "shutdownSignal">,
  conversationId: string,
  call: CallReceipt,
): Promise<ToolOutcome> {
  const stored = call.result as unknown as AnswerBody;
  const still = (detail: string): ToolOutcome => ({
    id: call.id,
    tool: call.tool,
    state: "uncertain",
    isError: true,
    body: { ...stored, sessionCheck: detail } as unknown as LeadBody,
  });
  const [seat] = await deps.db.select().from(seats).where(eq(seats.id, stored.seat));
  if (!seat?.present)
    return still("the seat is gone: its question's receipt cannot be read; the answer is never resent");
  const [machine] = await deps.db.select().from(machines).where(eq(machines.name, seat.machine));
  const conn = machine ? deps.agents.get(machine.name, machine.endpoint, machine.agentToken) : undefined;
  if (!conn || !(await conn.connect()))
    return still("the seat's agent could not be reached; the answer is never resent");
  let res;
  try {
    res = await conn.client.answerQuestion(
      create(AnswerQuestionRequestSchema, {
        seatName: seat.name,
        occupantId: seat.occupantId,
        requestId: stored.requestId,
        conversationId,
        reconcileOnly: true,
      }),
      { timeoutMs: 30_000, signal: deps.shutdownSignal },
    );
  } catch (e) {
    return still(`the agent's reading was lost (${(e as Error).message}); the answer is never resent`);
  }
  // Only what a receipt proves settles it; a refusal or no receipt leaves it as it was.
  if (res.result !== "delivered" && res.result !== "unconfirmed" && res.result !== "not_sent")
    return still(
      `the agent could not prove the answer's fate (${res.reason || res.result}${res.detail ? `: ${res.detail}` : ""}); the answer is never resent`,
    );
  const body = bodyFromAgent({ schemaVersion: 1, requestId: stored.requestId, deliveryId: call.id }, seat.id, res);
  body.detail = `${body.detail} (recorded at reconciliation from the native receipt; nothing was sent)`;
  await settleCall(deps.db, call.id, CallState.Settled, body, deps.now());
  deps.onJournalChange();
  return {
    id: call.id,
    tool: call.tool,
    state: "settled",
    isError: body.outcome !== "delivered",
    body: body as unknown as LeadBody,
  };
}
