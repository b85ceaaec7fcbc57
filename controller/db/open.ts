/**
 * The only place a database client is created: embedded PGlite in the state directory
 * by default, a real PostgreSQL when a URL is given. Both yield the same drizzle `Db`,
 * and the committed migrations are applied on open.
 */
import { fileURLToPath } from "node:url";
import { mkdirSync } from "node:fs";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { DatabaseUnreachableError } from "../../shared/errors.js";
import * as schema from "./schema.js";
import { lockDataDir } from "./data-dir-lock.js";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Database {
  readonly db: Db;
  readonly driver: "pglite" | "postgres";
  /** Where the data lives, without credentials. */
  readonly location: string;
  /** Runs `select 1`; throws when the database cannot answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type DatabaseTarget = { url: string } | { dataDir: string };

const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));
// Serialises migrations when several controllers start on one PostgreSQL.
const MIGRATION_LOCK_KEY = 72_070_207;

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  return "url" in target ? openPostgres(target.url) : openPglite(target.dataDir);
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparseable url)";
  }
}

async function openPostgres(url: string): Promise<Database> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const { migrate } = await import("drizzle-orm/postgres-js/migrator");
  const location = redact(url);
  const migrator = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await migrator`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
    await migrate(drizzle(migrator), { migrationsFolder });
  } catch (e) {
    await migrator.end({ timeout: 1 }).catch(() => {});
    throw new DatabaseUnreachableError(`cannot open PostgreSQL at ${location}: ${(e as Error).message}`, e);
  }
  await migrator.end({ timeout: 5 });
  const client = postgres(url, { max: 20, onnotice: () => {}, connect_timeout: 5, idle_timeout: 60 });
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    db,
    driver: "postgres",
    location,
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: () => client.end({ timeout: 5 }),
  };
}

async function openPglite(dataDir: string): Promise<Database> {
  mkdirSync(dataDir, { recursive: true });
  const lock = lockDataDir(`${dataDir}.lock`);
  try {
    const { PGlite } = await import("@electric-sql/pglite");
    const { drizzle } = await import("drizzle-orm/pglite");
    const { migrate } = await import("drizzle-orm/pglite/migrator");
    // The journal's working set is small: PostgreSQL's default 128 MB of shared buffers would
    // sit in the controller's own memory (PGlite runs in-process), ~130 MB of RSS for nothing.
    const pg = await PGlite.create(dataDir, { postgresqlconf: ["shared_buffers = 16MB"] });
    const db = drizzle(pg, { schema });
    await migrate(db, { migrationsFolder });
    return {
      db: db as unknown as Db,
      driver: "pglite",
      location: dataDir,
      ping: async () => {
        await pg.query("select 1");
      },
      close: async () => {
        try {
          await pg.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (e) {
    lock.release();
    throw new DatabaseUnreachableError(`cannot open the embedded database at ${dataDir}: ${(e as Error).message}`, e);
  }
}
