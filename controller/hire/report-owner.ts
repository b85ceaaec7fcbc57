/**
 * Report routing for hired seats (rule 50): the hiring conversation owns a hired seat's
 * reports; a later message_seat from another conversation adopts the seat. Never the
 * worker's choice.
 */
import type { Db } from "../db/open.js";
import { hiredBy } from "./hiring-conversation.js";

export async function reportOwner(
  db: Db,
  seatId: string,
  lastMessaged: { conversationId: string; at: Date } | undefined,
): Promise<{ conversationId: string } | undefined> {
  const hire = await hiredBy(db, seatId);
  if (!hire) return lastMessaged;
  if (lastMessaged && lastMessaged.at.getTime() > hire.at.getTime()) return lastMessaged;
  return { conversationId: hire.conversationId };
}
