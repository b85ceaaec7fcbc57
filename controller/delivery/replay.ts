/**
 * A repeated call id, for every tool that admits by id (message_seat, hire_agent, a question's
 * answer): what it is answered — the original's result, never a second dispatch — and which ids
 * this process admitted and has still in flight, so a replay refused meanwhile records no refusal.
 */
import { CallState, type Admission } from "../journal/call-receipts.js";
import { uncertainBody, type LeadBody, type ToolOutcome } from "./result-bodies.js";

/**
 * The ids whose admission this process saw answered (it inserted the call receipt) and whose
 * call has not finished. A later attempt of one of them — a replay, from this conversation or
 * another — inserts nothing, so if its own admission gets no answer there is nothing of its own
 * to refuse by id: recording a refusal then (journal/refused-admission.ts) would settle the
 * original, still in flight, as not sent and free its seat. Per pipeline, in memory: across a
 * crash the original is the dead process's, and its in-flight receipt is recovery's to mark.
 */
const byPipeline = new WeakMap<object, Set<string>>();

export function admittedHere(pipeline: object): Set<string> {
  let ids = byPipeline.get(pipeline);
  if (!ids) byPipeline.set(pipeline, (ids = new Set()));
  return ids;
}

/** What a repeated call id returns: the original result, never a second dispatch. */
export const NO_MATCHING_RECEIPT = "no_matching_receipt";
export const FOREIGN_ID =
  "no receipt with this id exists in this conversation, and this id cannot be admitted; nothing was dispatched. " +
  "Call again with a new id";

export function replayAdmission(
  tool: string,
  id: string,
  admission: Exclude<Admission, { kind: "admitted" }>,
): ToolOutcome {
  switch (admission.kind) {
    case "conflict":
      return {
        id,
        tool,
        state: "settled",
        isError: true,
        body: {
          schemaVersion: 1,
          outcome: "refused",
          reason: "receipt_conflict",
          deliveryId: id,
          detail: admission.detail,
        },
      };
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
          detail:
            "this id is being dispatched right now; it was not dispatched again. Reconcile it with reconcile_seat_call.",
        },
      };
    case "repeat": {
      const r = admission.receipt;
      if (r.state === CallState.Uncertain)
        return {
          id,
          tool,
          state: "uncertain",
          isError: true,
          body:
            (r.result as unknown as LeadBody | null) ??
            uncertainBody(tool, id, "the original's outcome is unknown; it was not dispatched again"),
        };
      if (r.resultExpired || !r.result) {
        return {
          id,
          tool,
          state: "settled",
          isError: true,
          body: {
            schemaVersion: 1,
            outcome: "expired",
            deliveryId: id,
            detail: "this id was settled long ago and its result body has expired; it is not replayed",
          },
        };
      }
      return { id, tool, state: "settled", isError: false, body: r.result as unknown as LeadBody };
    }
  }
}
