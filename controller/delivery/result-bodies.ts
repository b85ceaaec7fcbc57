/**
 * The bodies a lead receives, in the spec's words. Settled bodies are stored on the call
 * receipt and returned unchanged on a repeat or a reconcile.
 */
export const SEAT_CALL_META_KEY = "clankie/seat-call";
export const RECONCILE_TOOL = "reconcile_seat_call";

export type MessageOutcome = "delivered" | "unconfirmed" | "undelivered" | "seat_offline" | "unknown_seat";

export interface MessageSeatBody extends Record<string, unknown> {
  schemaVersion: 1;
  outcome: MessageOutcome;
  deliveryId: string;
  seat: string;
  deliveryStage: "stored" | "delivered" | "uncertain" | "rejected" | "unavailable";
  state?: "queued" | "started" | "steered";
  status?: "queued_until_turn_end";
  reason?: string;
  detail: string;
  nativeReceiptId?: string;
  proofAgeMs?: number;
  proofs?: { kind: string; outcome: string; detail: string; ageAtWriteMs: number }[];
  /** Settled originals of this seat and conversation, reported once with the next message that went out (rule 28). */
  previous?: { deliveryId: string; state: string }[];
  /** For a refused resend: the unresolved original it matched (rule 15). */
  originalDeliveryId?: string;
  originalState?: string;
}

export interface UncertainBody extends Record<string, unknown> {
  schemaVersion: 1;
  outcome: "uncertain";
  deliveryStage: "uncertain";
  tool: string;
  detail: string;
  reconcileTool: typeof RECONCILE_TOOL;
  deliveryId?: string;
  hireId?: string;
}

export function uncertainBody(tool: string, id: string, detail: string): UncertainBody {
  return { schemaVersion: 1, outcome: "uncertain", deliveryStage: "uncertain", deliveryId: id, tool, detail, reconcileTool: RECONCILE_TOOL };
}

/** The outcome of one tool call as the MCP layer returns it. */
export interface ToolOutcome {
  id: string;
  tool: string;
  /** `settled` when the body is final; `uncertain` when the effect's fate is unknown. */
  state: "settled" | "uncertain";
  body: Record<string, unknown>;
  isError: boolean;
}

export function seatCallMeta(o: ToolOutcome): Record<string, unknown> {
  return { [SEAT_CALL_META_KEY]: { id: o.id, tool: o.tool, state: o.state, deliveryId: o.id } };
}
