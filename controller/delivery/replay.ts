/** What a repeated call id returns: the original result, never a second dispatch. */
import { CallState, type Admission } from "../journal/call-receipts.js";
import { uncertainBody, type LeadBody, type ToolOutcome } from "./result-bodies.js";

export const NO_MATCHING_RECEIPT = "no_matching_receipt";
export const FOREIGN_ID =
  "no receipt with this id exists in this conversation, and this id cannot be admitted; nothing was dispatched. " +
  "Call again with a new id";

export function replayAdmission(tool: string, id: string, admission: Exclude<Admission, { kind: "admitted" }>): ToolOutcome {
  switch (admission.kind) {
    case "conflict":
      return { id, tool, state: "settled", isError: true, body: { schemaVersion: 1, outcome: "refused", reason: "receipt_conflict", deliveryId: id, detail: admission.detail } };
    case "foreign":
      // Another conversation's id: the call is still refused, but the answer is the one for an id this
      // conversation has no receipt of (no seat-call _meta, no hint that the id exists anywhere).
      return {
        id,
        tool,
        state: "none",
        isError: true,
        body: { schemaVersion: 1, outcome: "refused", reason: NO_MATCHING_RECEIPT, deliveryId: id, detail: FOREIGN_ID },
      };
    case "in_use":
      return { id, tool, state: "uncertain", isError: true, body: { schemaVersion: 1, outcome: "refused", reason: "receipt_in_use", deliveryId: id, detail: "this id is being dispatched right now; it was not dispatched again. Reconcile it with reconcile_seat_call." } };
    case "repeat": {
      const r = admission.receipt;
      if (r.state === CallState.Uncertain) return { id, tool, state: "uncertain", isError: true, body: (r.result as unknown as LeadBody | null) ?? uncertainBody(tool, id, "the original's outcome is unknown; it was not dispatched again") };
      if (r.resultExpired || !r.result) {
        return { id, tool, state: "settled", isError: true, body: { schemaVersion: 1, outcome: "expired", deliveryId: id, detail: "this id was settled long ago and its result body has expired; it is not replayed" } };
      }
      return { id, tool, state: "settled", isError: false, body: r.result as unknown as LeadBody };
    }
  }
}
