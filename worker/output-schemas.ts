/**
 * The worker tools' outputSchemas (as the lead's in controller/mcp/output-schemas.ts): the
 * structured content each answer carries, refusals included. Loose objects: a peer answer
 * passes the controller's delivery body through, whose fields the lead's schema types.
 */
import { z } from "zod";

const common = {
  schemaVersion: z.literal(1),
  deliveryId: z.string().optional(),
  detail: z.string().optional(),
  reason: z.string().optional().describe("a snake_case code: why nothing was sent"),
};

/** message_clankie and message_clankie_status: every answer names its stage. */
export const workerMessageResult = z.looseObject({
  ...common,
  deliveryStage: z
    .string()
    .describe("stored | delivered | read | not_sent | uncertain | rejected | unavailable | none"),
  received: z.boolean().optional(),
});

/** list_fleet_seats: the seats, or a refusal (outcome or a not-sent receipt's stage). */
export const fleetSeatsResult = z.looseObject({
  ...common,
  seats: z.array(z.unknown()).optional(),
  outcome: z.string().optional(),
  deliveryStage: z.string().optional(),
});

/** message_peer: the controller's delivery outcome, uncertainty, or a refusal before any send. */
export const peerMessageResult = z.looseObject({
  ...common,
  outcome: z.string().optional().describe("delivered | unconfirmed | undelivered | uncertain | refused"),
  deliveryStage: z.string().optional(),
});
