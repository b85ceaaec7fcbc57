/**
 * The outcome of one tool call as the MCP layer returns it. The bodies themselves are typed
 * in shared/delivery-bodies.ts (the lead's contract).
 */
import { SEAT_CALL_META_KEY, type LeadBody } from "../../shared/delivery-bodies.js";

export {
  RECONCILE_TOOL,
  SEAT_CALL_META_KEY,
  uncertainBody,
  type MessageSeatBody,
  type UncertainBody,
  type LeadBody,
  type DeliveryReason,
  type SettledOriginalBody,
} from "../../shared/delivery-bodies.js";

export interface ToolOutcome {
  id: string;
  tool: string;
  /**
   * `settled` when the body is final; `uncertain` when the effect's fate is unknown;
   * `none` when no receipt exists (no_matching_receipt): then no seat-call `_meta` is sent,
   * so nothing claims a settled receipt that is not there (issue 16).
   */
  state: "settled" | "uncertain" | "none";
  body: LeadBody;
  isError: boolean;
}

export function seatCallMeta(o: ToolOutcome): Record<string, unknown> | undefined {
  if (o.state === "none") return undefined;
  return { [SEAT_CALL_META_KEY]: { id: o.id, tool: o.tool, state: o.state, deliveryId: o.id } };
}
