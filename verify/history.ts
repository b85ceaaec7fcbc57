/**
 * The run's history, one event per line as Jepsen keeps it: an `invoke` when a lead calls,
 * then exactly one of `ok` (the message is in the seat), `fail` (it definitely is not) or
 * `info` (indeterminate: it may or may not be). Replays of an id carry `replayOf`.
 */
export type OpType = "invoke" | "ok" | "fail" | "info";

export interface Op {
  type: OpType;
  op: number;
  lead: string;
  deliveryId: string;
  seat: string;
  text: string;
  /** Set on a replay: the op whose id is called again with the same arguments. */
  replayOf?: number;
  /** The answer's outcome/reason, or the transport error. */
  outcome?: string;
  reason?: string;
  atMs: number;
}

export interface SeatRecord {
  seat: string;
  deliveryId: string;
  conversationId: string;
  text: string;
}

/** What the checker learned about one `info` op after the run healed. */
export interface InfoResolution {
  op: number;
  /** The receipt's state in the journal after reconcile_seat_call, or "none" when no receipt exists. */
  receiptState: string;
  /** Listed by `clankie seat-delivery list` (unresolved). */
  listed: boolean;
}

/** How a message_seat answer (or a failed call) is classified. */
export function classify(
  body: Record<string, unknown> | undefined,
  transportError: string | undefined,
): { type: "ok" | "fail" | "info"; outcome: string; reason?: string } {
  if (transportError !== undefined) return { type: "info", outcome: "transport_error", reason: transportError };
  const outcome = String(body?.outcome ?? "none");
  const reason = body?.reason === undefined ? undefined : String(body.reason);
  if (outcome === "delivered") return { type: "ok", outcome, ...(reason ? { reason } : {}) };
  if (
    outcome === "undelivered" ||
    outcome === "seat_offline" ||
    outcome === "unknown_seat" ||
    outcome === "invalid_argument"
  )
    return { type: "fail", outcome, ...(reason ? { reason } : {}) };
  if (outcome === "refused" && reason === "service_stopping") return { type: "fail", outcome, reason };
  // The journal could not admit the call: nothing was dispatched by it; about an earlier use of the id it says nothing.
  if (outcome === "unavailable") return { type: "fail", outcome, ...(reason ? { reason } : {}) };
  return { type: "info", outcome, ...(reason ? { reason } : {}) };
}
