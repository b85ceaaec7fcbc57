/**
 * Who may stop a seat's turn (issue 11: stop_task let any lead stop any seat): the owner's
 * own conversation (global-default, whose token lives in the owner's state directory), or
 * a conversation that is messaging the seat — one of its messages reached the seat, or may
 * have, in the last STOP_AUTHORITY_WINDOW_MS — or the conversation that hired the seat's
 * current occupant (its hire receipt, controller/hire/hiring-conversation.ts). A message that
 * was never sent, or a hire of an earlier occupant of the same pane, gives no authority.
 */
import { and, eq, gte, inArray } from "drizzle-orm";
import { ReceiptState } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { deliveryReceipts } from "../db/schema.js";
import { DEFAULT_CONVERSATION } from "./conversations.js";
import { hiredBy } from "../hire/hiring-conversation.js";

export const STOP_AUTHORITY_WINDOW_MS = 24 * 60 * 60_000;

const REACHED_OR_MAY_HAVE = [
  ReceiptState.Dispatching,
  ReceiptState.Delivered,
  ReceiptState.Queued,
  ReceiptState.Steered,
  ReceiptState.Started,
  ReceiptState.Unconfirmed,
  ReceiptState.Uncertain,
  ReceiptState.AbandonedUnknown,
];

export async function mayStopSeat(
  db: Db,
  conversationId: string,
  seatId: string,
  now: Date,
  occupantId?: string,
): Promise<boolean> {
  if (conversationId === DEFAULT_CONVERSATION) return true;
  if ((await hiredBy(db, seatId, occupantId))?.conversationId === conversationId) return true;
  const since = new Date(now.getTime() - STOP_AUTHORITY_WINDOW_MS);
  const [row] = await db
    .select({ id: deliveryReceipts.id })
    .from(deliveryReceipts)
    .where(
      and(
        eq(deliveryReceipts.conversationId, conversationId),
        eq(deliveryReceipts.seatId, seatId),
        inArray(deliveryReceipts.state, REACHED_OR_MAY_HAVE),
        gte(deliveryReceipts.createdAt, since),
      ),
    )
    .limit(1);
  return row !== undefined;
}
