/** The lead's message_seat tool: argument schema and handler. */
import { z } from "zod";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InvalidArgumentError } from "../../../shared/errors.js";
import { messageSeat } from "../../delivery/message-seat.js";
import { MESSAGE_SEAT, type PipelineDeps } from "../../delivery/pipeline.js";
import { SEAT_CALL_META_KEY, type ToolOutcome } from "../../delivery/result-bodies.js";
import { errorResult, toolResult } from "../tool-result.js";
import { deliveryResult } from "../output-schemas.js";
import { acknowledgeReports } from "../../reports/worker-reports.js";
import { observeMessageSeat } from "../../metrics/delivery-hooks.js";
import { traceCall } from "../../../shared/rpc/trace-context.js";
import { answerWorkerQuestion } from "../../workers/question-answer.js";
import { canonicalRef } from "../../../shared/ids.js";

export const MAX_MESSAGE_CHARS = 32_768;

/** An answer to a worker's question: its requestId, and for each question id at least one answer. */
export const questionAnswerArgs = z
  .object({
    requestId: z.string().min(1).max(200),
    answers: z.record(
      z.string().min(1).max(200),
      z.object({ answers: z.array(z.string().min(1).max(MAX_MESSAGE_CHARS)).min(1).max(20) }).strict(),
    ),
  })
  .strict();

export const messageSeatArgs = z
  .object({
    seat: z.string().min(1).max(200).describe('The seat: "machine/name", or a name that is unique in the fleet.'),
    message: z
      .string()
      .min(1)
      .max(MAX_MESSAGE_CHARS)
      .optional()
      .describe(
        "The message text. It is delivered as data, never typed into a terminal. Exactly one of message or questionAnswer.",
      ),
    questionAnswer: questionAnswerArgs
      .optional()
      .describe(
        "The hiring lead's answer to a worker's question (see worker_reports): its requestId and an answer list per question id.",
      ),
    delivery: z
      .enum(["steer", "queue"])
      .optional()
      .describe(
        "An explicit delivery mode; omit for plain Send. Refused before sending when the seat does not offer it.",
      ),
    inReplyTo: z.string().min(1).max(200).optional().describe("The event id this message answers."),
  })
  .strict();

const seatCallMeta = z.object({ deliveryId: z.string().optional() }).passthrough();

/** The caller's deliveryId from `_meta["clankie/seat-call"]`, validated. */
export function callerDeliveryId(meta: Record<string, unknown> | undefined): string | undefined {
  const raw = meta?.[SEAT_CALL_META_KEY];
  if (raw === undefined) return undefined;
  const parsed = seatCallMeta.safeParse(raw);
  if (!parsed.success)
    throw new InvalidArgumentError(
      `_meta["${SEAT_CALL_META_KEY}"] must be an object with an optional string deliveryId`,
    );
  return parsed.data.deliveryId;
}

/** The seat's host took the reply: a settled `delivered` body (delivered, queued, steered or started). */
function replyAdmitted(o: ToolOutcome): boolean {
  return o.state === "settled" && o.body.outcome === "delivered";
}

export function registerMessageSeat(server: McpServer, deps: PipelineDeps, conversationId: string): void {
  server.registerTool(
    MESSAGE_SEAT,
    {
      title: "Message a seat",
      description:
        "Deliver a message to a worker seat through its native control channel. The result names the mechanism (delivered, queued, steered, started) or why nothing was sent; an uncertain result must be reconciled with reconcile_seat_call, never resent.",
      inputSchema: messageSeatArgs,
      outputSchema: deliveryResult,
      // Writes into another agent's session: not read-only, not destructive (it adds, never removes), idempotent only with a caller-minted deliveryId.
      annotations: {
        title: "Message a seat",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    async (args, extra) =>
      traceCall(MESSAGE_SEAT, async () => {
        const startedAt = performance.now();
        try {
          const deliveryId = callerDeliveryId(extra._meta as Record<string, unknown> | undefined);
          if ((args.message === undefined) === (args.questionAnswer === undefined))
            throw new InvalidArgumentError("give exactly one of message or questionAnswer");
          if (args.questionAnswer) {
            const n = Object.keys(args.questionAnswer.answers).length;
            if (n === 0 || n > 20 || JSON.stringify(args.questionAnswer.answers).length > MAX_MESSAGE_CHARS)
              throw new InvalidArgumentError(
                `questionAnswer.answers needs 1-20 question ids, at most ${MAX_MESSAGE_CHARS} characters in all`,
              );
            return observeMessageSeat(
              deps.hooks?.metrics,
              startedAt,
              toolResult(
                await answerWorkerQuestion(
                  deps,
                  { conversationId, deliveryId },
                  { seat: args.seat, questionAnswer: args.questionAnswer },
                ),
              ),
            );
          }
          const outcome = await messageSeat(deps, { conversationId, deliveryId }, { ...args, message: args.message! });
          // A reply acknowledges that exact original report (only this conversation was offered its id),
          // and only once the reply itself was admitted: a refused or unsent reply answered nothing (rule 19).
          if (args.inReplyTo && replyAdmitted(outcome))
            await acknowledgeReports(deps.db, conversationId, [canonicalRef(args.inReplyTo)], deps.now()).catch(
              () => undefined,
            );
          return observeMessageSeat(deps.hooks?.metrics, startedAt, toolResult(outcome));
        } catch (e) {
          return observeMessageSeat(deps.hooks?.metrics, startedAt, errorResult(e));
        }
      }),
  );
}
