/**
 * Databases for tests: a copy of the run's PGlite template, or a fresh database on the
 * PostgreSQL that DATABASE_URL points at (created here, dropped afterwards).
 */
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { inject } from "vitest";
import { openDatabase, type Database } from "../../controller/db/open.js";

export type Driver = "pglite" | "postgres";

/** PostgreSQL is at DATABASE_URL (always in CI). */
export const HAS_POSTGRES = Boolean(process.env.DATABASE_URL);

/**
 * The drivers a suite written once per driver (`describe.each(DRIVERS)`) runs on in this slice. `npm test` takes
 * one: PostgreSQL when it is set, else PGlite. `npm run test:long` (CLANKIE_TEST_SLICE=long) takes the other one,
 * PGlite, when PostgreSQL is set; the two slices together cover both drivers, each once.
 */
const LONG_SLICE = process.env.CLANKIE_TEST_SLICE === "long";
export const DRIVERS: Driver[] = LONG_SLICE
  ? HAS_POSTGRES
    ? ["pglite"]
    : []
  : HAS_POSTGRES
    ? ["postgres"]
    : ["pglite"];

/** For a suite in such a file that runs once, on the best driver here: in `npm test`'s slice only. */
export const ONCE: Driver[] = LONG_SLICE ? [] : [HAS_POSTGRES ? "postgres" : "pglite"];

/** For a suite that needs PostgreSQL itself (two replicas on one database): in `npm test`'s slice, when it is set. */
export const POSTGRES_ONCE: "postgres"[] = !LONG_SLICE && HAS_POSTGRES ? ["postgres"] : [];

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `clankie-${prefix}-`));
}

/** Puts a migrated PGlite data directory at `<stateDir>/pgdata`, as the controller expects it. */
export function seedPglite(stateDir: string): void {
  cpSync(inject("pgliteTemplate"), join(stateDir, "pgdata"), { recursive: true });
}

/** Creates a fresh PostgreSQL database and returns its URL and a dropper. */
export async function freshPostgres(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error("DATABASE_URL is not set");
  const name = `clankie_t_${randomBytes(6).toString("hex")}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const a = postgres(base, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

/** State dir + database for one controller under test. */
export async function prepareStore(
  driver: Driver,
): Promise<{ stateDir: string; databaseUrl: string | undefined; cleanup: () => Promise<void> }> {
  const stateDir = tempDir("state");
  if (driver === "pglite") {
    seedPglite(stateDir);
    return { stateDir, databaseUrl: undefined, cleanup: async () => {} };
  }
  const pg = await freshPostgres();
  return { stateDir, databaseUrl: pg.url, cleanup: pg.drop };
}

/** A fresh store's database, opened, for a suite that drives the journal itself: close it, then clean up. */
export async function openTestDatabase(driver: Driver): Promise<{ database: Database; cleanup: () => Promise<void> }> {
  const store = await prepareStore(driver);
  const database = await openDatabase(
    store.databaseUrl ? { url: store.databaseUrl } : { dataDir: `${store.stateDir}/pgdata` },
  );
  return { database, cleanup: store.cleanup };
}
