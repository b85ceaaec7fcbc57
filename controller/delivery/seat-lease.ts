/**
 * One delivery per seat at a time across every controller on the journal (ADR 0207,
 * VUH-2779): a lease row per seat in the database. A later message polls for it, bounded
 * at 25 s. No connection is held while waiting, so many waiting seats cannot starve the
 * pool; a lease whose holder died expires and is taken over. Within one process the
 * in-memory SeatTurns queue goes first, so local waiters do not poll each other.
 */
import { and, eq, lt, sql } from "drizzle-orm";
import { seatTurns } from "../db/schema.js";
import type { Db, Tx } from "../db/open.js";

export const SEAT_TURN_WAIT_MS = 25_000;
const POLL_MS = 25;

export interface SeatLease {
  /** Deletes the lease row inside the settle's transaction: the settle and the release are one commit. */
  releaseWithin(tx: Tx): Promise<void>;
  /** That transaction committed: the lease is gone. */
  markReleased(): void;
  /** Gives it back on its own (no settle, or a settle that failed); a no-op once released. */
  release(): Promise<void>;
}

/** Takes the seat's lease, or returns undefined when it stayed held for `waitMs`. */
export async function takeSeatLease(db: Db, seatIdValue: string, holder: string, leaseMs: number, waitMs = SEAT_TURN_WAIT_MS): Promise<SeatLease | undefined> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    const expires = sql`now() + make_interval(secs => ${leaseMs / 1000})`;
    const taken = await db
      .insert(seatTurns)
      .values({ seatId: seatIdValue, holder, expiresAt: expires as unknown as Date })
      .onConflictDoUpdate({ target: seatTurns.seatId, set: { holder, expiresAt: expires as unknown as Date }, where: lt(seatTurns.expiresAt, sql`now()`) })
      .returning({ holder: seatTurns.holder });
    if (taken[0]?.holder === holder) {
      const mine = and(eq(seatTurns.seatId, seatIdValue), eq(seatTurns.holder, holder));
      let released = false;
      return {
        releaseWithin: async (tx) => {
          await tx.delete(seatTurns).where(mine);
        },
        markReleased: () => {
          released = true;
        },
        release: async () => {
          if (released) return;
          await db.delete(seatTurns).where(mine);
          released = true;
        },
      };
    }
    if (performance.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
