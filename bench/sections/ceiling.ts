/**
 * The journal's ceiling: what the database itself does with the smallest receipt
 * transaction — insert a delivery receipt, update it to settled, commit — at a given number
 * of concurrent callers, through raw postgres.js or the raw PGlite client, into the same
 * delivery_receipts table the pipeline writes.
 */
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import type { PGlite } from "@electric-sql/pglite";

const INSERT = `insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state, dispatched_at)
  values ($1, 'bench-ceiling', 'benchbox/ceiling', $2, 'auto', 'dispatching', now())`;
const SETTLE = `update delivery_receipts set state = 'delivered', settled_at = now() where id = $1`;

/** Runs `callers` loops of `tx` until `ms` elapse; returns how many committed. */
export async function loopFor(
  ms: number,
  callers: number,
  tx: (caller: number) => Promise<boolean>,
): Promise<{ ok: number; failed: number; elapsedMs: number }> {
  const start = performance.now();
  const end = start + ms;
  let ok = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      while (performance.now() < end) {
        if (await tx(caller)) ok++;
        else failed++;
      }
    }),
  );
  return { ok, failed, elapsedMs: performance.now() - start };
}

export interface CeilingRunner {
  run(callers: number, ms: number): Promise<{ ok: number; elapsedMs: number }>;
  close(): Promise<void>;
}

export async function postgresCeiling(url: string, maxCallers: number): Promise<CeilingRunner> {
  const sql = postgres(url, { max: maxCallers, onnotice: () => {} });
  // Open every connection before timing anything.
  await Promise.all(Array.from({ length: maxCallers }, () => sql`select 1`));
  return {
    run: (callers, ms) =>
      loopFor(ms, callers, async () => {
        const id = randomUUID();
        await sql.begin(async (tx) => {
          await tx.unsafe(INSERT, [id, id]);
          await tx.unsafe(SETTLE, [id]);
        });
        return true;
      }),
    close: () => sql.end({ timeout: 5 }),
  };
}

/** PGlite serialises transactions inside its one connection; concurrency only queues. */
export function pgliteCeiling(pg: PGlite): CeilingRunner {
  return {
    run: (callers, ms) =>
      loopFor(ms, callers, async () => {
        const id = randomUUID();
        await pg.transaction(async (tx) => {
          await tx.query(INSERT, [id, id]);
          await tx.query(SETTLE, [id]);
        });
        return true;
      }),
    close: async () => {},
  };
}
