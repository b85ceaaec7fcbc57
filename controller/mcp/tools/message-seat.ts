/** The lead's message_seat tool: argument schema and handler. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InvalidArgumentError } from "../../../shared/errors.js";
import { messageSeat, MESSAGE_SEAT, type PipelineDeps } from "../../delivery/message-seat.js";
import { SEAT_CALL_META_KEY } from "../../delivery/result-bodies.js";
import { errorResult, toolResult } from "../tool-result.js";
import { acknowledgeReports } from "../../reports/worker-reports.js";

export const MAX_MESSAGE_CHARS = 32_768;

export const messageSeatArgs = z
  .object({
    seat: z.string().min(1).max(200).describe('The seat: "machine/name", or a name that is unique in the fleet.'),
    message: z.string().min(1).max(MAX_MESSAGE_CHARS).describe("The message text. It is delivered as data, never typed into a terminal."),
    delivery: z.enum(["steer", "queue"]).optional().describe("An explicit delivery mode; omit for plain Send. Refused before sending when the seat does not offer it."),
    inReplyTo: z.string().min(1).max(200).optional().describe("The event id this message answers."),
  })
  .strict();

const seatCallMeta = z.object({ deliveryId: z.string().optional() }).passthrough();

/** The caller's deliveryId from `_meta["clankie/seat-call"]`, validated. */
export function callerDeliveryId(meta: Record<string, unknown> | undefined): string | undefined {
  const raw = meta?.[SEAT_CALL_META_KEY];
  if (raw === undefined) return undefined;
  const parsed = seatCallMeta.safeParse(raw);
  if (!parsed.success) throw new InvalidArgumentError(`_meta["${SEAT_CALL_META_KEY}"] must be an object with an optional string deliveryId`);
  return parsed.data.deliveryId;
}

export function registerMessageSeat(server: McpServer, deps: PipelineDeps, conversationId: string): void {
  server.registerTool(
    MESSAGE_SEAT,
    {
      title: "Message a seat",
      description:
        "Deliver a message to a worker seat through its native control channel. The result names the mechanism (delivered, queued, steered, started) or why nothing was sent; an uncertain result must be reconciled with reconcile_seat_call, never resent.",
      inputSchema: messageSeatArgs,
    },
    async (args, extra) => {
      try {
        const deliveryId = callerDeliveryId(extra._meta as Record<string, unknown> | undefined);
        const outcome = await messageSeat(deps, { conversationId, deliveryId }, args);
        // A reply acknowledges that exact original report: only this conversation was offered its id.
        if (args.inReplyTo) await acknowledgeReports(deps.db, conversationId, [args.inReplyTo], deps.now()).catch(() => undefined);
        return toolResult(outcome);
      } catch (e) {
        return errorResult(e);
      }
    },
  );
}
