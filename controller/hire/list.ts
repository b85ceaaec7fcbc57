/** Hire receipts for the owner (clankie hire-receipt list): unresolved ones with their age. */
import { desc, inArray } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { hireReceipts, type HireReceipt } from "../db/schema.js";
import { UNRESOLVED_HIRE_STATES } from "./bodies.js";

export async function listHireReceipts(db: Db, includeSettled: boolean): Promise<HireReceipt[]> {
  const q = db.select().from(hireReceipts);
  return (includeSettled ? q : q.where(inArray(hireReceipts.state, [...UNRESOLVED_HIRE_STATES]))).orderBy(desc(hireReceipts.createdAt)).limit(1000);
}
