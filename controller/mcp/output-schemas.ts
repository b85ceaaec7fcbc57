/**
 * Each lead tool's outputSchema: the structured content it returns, refusals included (the
 * MCP client validates structured content whenever it is present, error results too). One
 * result vocabulary: every tool's answer says what happened in `outcome`, except the plain
 * reads (list_seats, worker_reports, worker_report_status), which carry `outcome` only when refused.
 */
import { z } from "zod";

/** A typed refusal before anything was dispatched (tool-result.ts errorResult). */
const refusal = {
  reason: z.string().optional().describe("a snake_case code: why nothing was done"),
  dispatched: z.literal(false).optional().describe("false on a refusal: nothing was sent"),
  retryable: z
    .literal(true)
    .optional()
    .describe("true when the same call may succeed later unchanged (the journal is back)"),
};
const refusedOutcome = z
  .enum(["refused", "invalid_argument", "unavailable", "undelivered"])
  .optional()
  .describe("present only when the call was refused");

const proof = z.object({ kind: z.string(), outcome: z.string(), detail: z.string(), ageAtWriteMs: z.number() });

/** message_seat's body: settled (delivered, unconfirmed, undelivered, seat_offline, unknown_seat), uncertain, or a refusal. */
export const deliveryResult = z.looseObject({
  schemaVersion: z.literal(1),
  outcome: z
    .string()
    .describe(
      "delivered | unconfirmed | undelivered | seat_offline | unknown_seat | uncertain | refused | invalid_argument | unavailable (journal down before admission: an earlier answer for the id stands) (reconcile also: no_matching_receipt, expired)",
    ),
  detail: z.string().optional(),
  deliveryId: z.string().optional(),
  seat: z.string().optional(),
  deliveryStage: z.enum(["stored", "delivered", "consumed", "uncertain", "rejected", "unavailable"]).optional(),
  state: z.string().optional().describe("queued | started | steered; abandoned-unknown after a settle"),
  status: z.string().optional(),
  nativeReceiptId: z.string().optional(),
  proofAgeMs: z.number().optional(),
  proofs: z.array(proof).optional(),
  previous: z.array(z.object({ deliveryId: z.string(), state: z.string() })).optional(),
  originalDeliveryId: z.string().optional(),
  originalState: z.string().optional(),
  tool: z.string().optional(),
  reconcileTool: z.string().optional(),
  hireId: z.string().optional(),
  ...refusal,
});

const seatView = z.object({
  id: z.string(),
  machine: z.string(),
  name: z.string(),
  kind: z.string(),
  status: z.string(),
  online: z.boolean(),
  occupantId: z.string(),
  title: z.string(),
  inputCapabilities: z.object({
    deliveryModes: z.array(z.string()),
    interrupt: z.boolean(),
    nextTurnOnly: z.boolean(),
  }),
  unresolvedReceipts: z.number().int(),
  cannotWork: z
    .object({ reason: z.string(), detail: z.string() })
    .optional()
    .describe("present when the seat's harness itself said it cannot take a turn (no model, no key, no model server)"),
  hiredBy: z
    .object({ conversationId: z.string(), hireId: z.string() })
    .optional()
    .describe("for a seat hire_agent started, while the hired occupant holds it"),
});

export const listSeatsResult = z.object({
  schemaVersion: z.literal(1),
  seats: z.array(seatView).optional(),
  outcome: refusedOutcome,
  detail: z.string().optional(),
  ...refusal,
});

export const stopTaskResult = z.object({
  schemaVersion: z.literal(1),
  outcome: z.enum([
    "stopped",
    "already_finished",
    "unsupported",
    "uncertain",
    "unavailable",
    "unknown_seat",
    "not_authorized",
    "refused",
    "invalid_argument",
    "undelivered",
  ]),
  seat: z.string().optional(),
  detail: z.string(),
  ...refusal,
});

const report = z.object({
  deliveryId: z.string(),
  seat: z.string(),
  text: z.string(),
  createdAt: z.string(),
  unadopted: z.boolean(),
});
export const workerReportsResult = z.object({
  schemaVersion: z.literal(1),
  reports: z.array(report).optional(),
  outcome: refusedOutcome,
  detail: z.string().optional(),
  ...refusal,
});
export const acknowledgeResult = z.object({
  schemaVersion: z.literal(1),
  outcome: z.enum(["acknowledged", "refused", "invalid_argument", "unavailable", "undelivered"]),
  acknowledged: z.array(z.string()).optional(),
  refused: z.array(z.string()).optional(),
  detail: z.string().optional(),
  ...refusal,
});
export const reportStatusResult = z.object({
  schemaVersion: z.literal(1),
  deliveryId: z.string().optional(),
  state: z.string().optional(),
  outcome: refusedOutcome,
  detail: z.string().optional(),
  ...refusal,
});

/** hire_agent's body: spawned or failed with a typed reason, or a refusal before anything was launched. */
export const hireAgentResult = z.looseObject({
  schemaVersion: z.literal(1),
  outcome: z.string().describe("spawned | failed | refused | invalid_argument | unavailable | undelivered"),
  detail: z.string(),
  hireId: z.string().optional(),
  machine: z.string().optional(),
  harness: z.string().optional(),
  seat: z.string().optional(),
  paneId: z.string().optional(),
  occupantId: z.string().optional(),
  ...refusal,
});
