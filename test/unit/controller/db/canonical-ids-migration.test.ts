/**
 * Issue 32 item 4, "one id, one delivery": migration 0010 lower-cases the ids a journal already
 * holds. A journal is migrated to 0009, given rows in upper case (and one id in both cases, as
 * the old code admitted it twice), then migrated to the end, on each database driver.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { DRIVERS, freshPostgres, tempDir, type Driver } from "../../../kit/test-db.js";

const MIGRATIONS = join(import.meta.dirname, "../../../../controller/db/migrations");
const TAG = "0010_i32_canonical_ids";

/**
 * The migrations folder as it was before 0010: 0010 and every later one left out (drizzle applies
 * only migrations newer than the last one applied, so a later one kept here would skip 0010).
 */
function foldersBefore0010(): string {
  const dir = tempDir("migrations");
  cpSync(MIGRATIONS, dir, { recursive: true });
  const journal = JSON.parse(readFileSync(join(dir, "meta/_journal.json"), "utf8")) as { entries: { tag: string }[] };
  const from = journal.entries.findIndex((e) => e.tag === TAG);
  for (const e of journal.entries.slice(from)) rmSync(join(dir, `${e.tag}.sql`));
  journal.entries = journal.entries.slice(0, from);
  writeFileSync(join(dir, "meta/_journal.json"), JSON.stringify(journal));
  return dir;
}

interface Journal {
  query<T>(text: string): Promise<T[]>;
  migrate(folder: string): Promise<void>;
  close(): Promise<void>;
}

async function openJournal(driver: Driver): Promise<Journal> {
  if (driver === "pglite") {
    const pg = new PGlite();
    const db = drizzlePglite(pg);
    return {
      query: async <T>(text: string) => (await pg.query<T>(text)).rows,
      migrate: (folder) => migratePglite(db, { migrationsFolder: folder }),
      close: () => pg.close(),
    };
  }
  const fresh = await freshPostgres();
  const client = postgres(fresh.url, { max: 1, onnotice: () => {} });
  const db = drizzlePostgres(client);
  return {
    query: async <T>(text: string) => [...(await client.unsafe(text))] as T[],
    migrate: (folder) => migratePostgres(db, { migrationsFolder: folder }),
    close: async () => {
      await client.end();
      await fresh.drop();
    },
  };
}

const A = "25D3A6F0-1B2C-4D5E-8F90-A1B2C3D4E5F6";
const TWICE = "7E3F0C11-2222-4333-8444-955566667777";
const HIRE = "ABCDEF01-2345-4678-89AB-CDEF01234567";
const FRESH = "FEDCBA98-7654-4321-8FED-CBA987654321";
const REPORT = "0000AAAA-BBBB-4CCC-8DDD-EEEEFFFF0000";

async function seedUpperCase(j: Journal): Promise<void> {
  for (const id of [A, TWICE, TWICE.toLowerCase()]) {
    const body = JSON.stringify({ schemaVersion: 1, outcome: "delivered", deliveryId: id });
    await j.query(`insert into operator_call_receipts (id, tool, conversation_id, fingerprint, state, result)
      values ('${id}', 'message_seat', 'conv', 'fp', 'settled', '${body}'::jsonb)`);
    await j.query(`insert into delivery_receipts (id, conversation_id, seat_id, content_fingerprint, mode, state, in_reply_to)
      values ('${id}', 'conv', 'm/inbox', 'cf', 'auto', 'delivered', '${REPORT}')`);
  }
  await j.query(`insert into fences (delivery_id, seat_id, content_fingerprint) values ('${A}', 'm/inbox', 'cf')`);
  await j.query(
    `insert into settlements (delivery_id, disposition, settled_by, evidence) values ('${A}', 'delivered', 'owner', '{}'::jsonb)`,
  );
  await j.query(`insert into hire_receipts (id, conversation_id, fingerprint, machine, harness, state)
    values ('${HIRE}', 'conv', 'fp', 'm', 'codex', 'settled-not-launched')`);
  await j.query(`insert into hire_receipts (id, conversation_id, fingerprint, machine, harness, state, fresh_intent_id, after_receipt_id)
    values ('${FRESH}', 'conv', 'fp', 'm', 'codex', 'reserved', '${FRESH}', '${HIRE}')`);
  await j.query(`insert into worker_reports (id, seat_id, conversation_id, text, state, created_at)
    values ('${REPORT}', 'm/inbox', 'conv', 'done', 'pending', now())`);
}

describe.each(DRIVERS)("migration 0010 on %s (issue 32 item 4: stored ids become canonical)", (driver) => {
  let journal: Journal | undefined;
  afterEach(async () => {
    await journal?.close();
    journal = undefined;
  });

  it("lower-cases every stored id and its references, and keeps both rows of an id already stored in both cases", async () => {
    const j = (journal = await openJournal(driver));
    await j.migrate(foldersBefore0010());
    await seedUpperCase(j);
    await j.migrate(MIGRATIONS);

    const ids = async (table: string, column = "id") =>
      (await j.query<{ v: string }>(`select ${column} as v from ${table} order by 1`)).map((r) => r.v);
    const a = A.toLowerCase();
    // The id in both cases stays two rows, untouched: the migration neither merges nor fails on them.
    expect(await ids("delivery_receipts")).toEqual([a, TWICE.toLowerCase(), TWICE].sort());
    expect(await ids("operator_call_receipts")).toEqual([a, TWICE.toLowerCase(), TWICE].sort());
    expect(await ids("fences", "delivery_id")).toEqual([a]);
    expect(await ids("settlements", "delivery_id")).toEqual([a]);
    expect(await ids("hire_receipts")).toEqual([HIRE.toLowerCase(), FRESH.toLowerCase()].sort());
    expect(await ids("hire_receipts", "fresh_intent_id")).toEqual([FRESH.toLowerCase(), null]);
    expect(await ids("hire_receipts", "after_receipt_id")).toEqual([HIRE.toLowerCase(), null]);
    expect(await ids("worker_reports")).toEqual([REPORT.toLowerCase()]);
    expect(new Set(await ids("delivery_receipts", "in_reply_to"))).toEqual(new Set([REPORT.toLowerCase()]));
    // A replay answers with the stored body: it names the id as the journal now holds it.
    const [body] = await j.query<{ v: string }>(
      `select result->>'deliveryId' as v from operator_call_receipts where id = '${a}'`,
    );
    expect(body?.v).toBe(a);
    // The foreign keys are back: a fence for no receipt is refused.
    await expect(
      j.query(`insert into fences (delivery_id, seat_id, content_fingerprint) values ('${A}', 'm/inbox', 'cf')`),
    ).rejects.toThrow();
  });
});
