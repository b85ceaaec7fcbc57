/**
 * The results the bridge itself answers with, when the controller's own answer is missing:
 * typed uncertainty carrying the original id (ADR 0207, VUH-1638: a lost result is never a
 * bare transport error and never a reason to resend), or a definite "nothing was sent".
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { RECONCILE_TOOL, SEAT_CALL_META_KEY } from "../controller/for-cli.js";

/** The ids a seat call carries, minted by the bridge before dispatch. */
export interface SeatCallIds {
  tool: string;
  id: string;
  /** Which field names the id: message_seat → deliveryId, hire_agent → hireId. */
  field: "deliveryId" | "hireId";
}

function result(body: Record<string, unknown>, meta?: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(body) }],
    structuredContent: body,
    isError: true,
    ...(meta ? { _meta: meta } : {}),
  };
}

/** The call may have reached the controller and its answer was lost. */
export function uncertainResult(
  tool: string,
  ids: SeatCallIds | undefined,
  reason: string,
  detail: string,
): CallToolResult {
  if (!ids)
    return result({
      schemaVersion: 1,
      outcome: "uncertain",
      tool,
      reason,
      detail: `${detail}; the answer was lost, so whether it ran is unknown`,
    });
  const body = {
    schemaVersion: 1,
    outcome: "uncertain",
    deliveryStage: "uncertain",
    [ids.field]: ids.id,
    tool,
    reason,
    detail: `${detail}; it may still take effect. Never resend it: reconcile ${ids.field} ${ids.id} with ${RECONCILE_TOOL}.`,
    reconcileTool: RECONCILE_TOOL,
  };
  return result(body, { [SEAT_CALL_META_KEY]: { id: ids.id, tool, state: "uncertain", [ids.field]: ids.id } });
}

/** The call provably never reached tool admission: nothing was dispatched. */
export function notSentResult(
  tool: string,
  ids: SeatCallIds | undefined,
  reason: string,
  detail: string,
): CallToolResult {
  const body: Record<string, unknown> = {
    schemaVersion: 1,
    outcome: "undelivered",
    tool,
    reason,
    detail: `${detail}; nothing was dispatched`,
    dispatched: false,
  };
  if (ids) body[ids.field] = ids.id;
  return result(body);
}
