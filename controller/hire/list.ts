/** Hire receipts for the owner (clankie hire-receipt list): unresolved ones, or all, with their age. */
import { and, desc, eq, inArray } from "drizzle-orm";
import type { Db } from "../db/open.js";
import { hireReceipts, type HireReceipt } from "../db/schema.js";
import { HireState, UNRESOLVED_HIRE_STATES } from "./bodies.js";
import { InvalidArgumentError } from "../../shared/errors.js";

export const HIRE_STATES: readonly string[] = Object.values(HireState);

export async function listHireReceipts(db: Db, includeSettled: boolean, state = ""): Promise<HireReceipt[]> {
  if (state && !HIRE_STATES.includes(state))
    throw new InvalidArgumentError(`state must be one of ${HIRE_STATES.join(", ")}; got ${JSON.stringify(state)}`);
  const unresolved = includeSettled ? undefined : inArray(hireReceipts.state, [...UNRESOLVED_HIRE_STATES]);
  return db
    .select()
    .from(hireReceipts)
    .where(and(unresolved, state ? eq(hireReceipts.state, state) : undefined))
    .orderBy(desc(hireReceipts.createdAt))
    .limit(1000);
}
