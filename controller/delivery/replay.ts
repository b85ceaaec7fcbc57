/** What a repeated call id returns: the original result, never a second dispatch. */
import { CallState, type Admission } from "../journal/call-receipts.js";
import { uncertainBody, type LeadBody, type ToolOutcome } from "./result-bodies.js";

export function replayAdmission(tool: string, id: string, admission: Exclude<Admission, { kind: "admitted" }>): ToolOutcome {
  switch (admission.kind) {
    case "conflict":
      return { id, tool, state: "settled", isError: true, body: { schemaVersion: 1, outcome: "refused", reason: "receipt_conflict", deliveryId: id, detail: admission.detail } };
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
