/**
 * The only place a database client is created: embedded PGlite in the state directory
 * by default, a real PostgreSQL when a URL is given. Both yield the same drizzle `Db`,
 * and the committed migrations are applied on open (on PostgreSQL while a second connection
 * checks that the server still answers: migration-watch.ts).
 */
import { fileURLToPath } from "node:url";
import { mkdirSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { keepYoungGenerationSmall } from "../../shared/heap-budget.js";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { DatabaseUnreachableError } from "../../shared/errors.js";
import * as schema from "./schema.js";
import { lockDataDir } from "./data-dir-lock.js";
import { initialiseInChild, isInitialised } from "./init-pglite.js";
import { reconnectBackoffSeconds } from "./reconnect-backoff.js";
import { setAnswerDeadline } from "./answer-deadline.js";
import { boundStatements } from "./bounded-statements.js";
import { boundTransactions } from "./bounded-transactions.js";
import { whileServerAnswers } from "./migration-watch.js";
import { redactDatabaseUrl, writableHostOption } from "./database-url.js";
import { migrateInOneTransaction, poolerTarget, timeoutsPerTransaction } from "./pooled-client.js";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Database {
  /** Admissions, settles and every write: its own pool, so reads never starve it. */
  readonly db: Db;
  /** Reads for status, list_seats and the dashboard: a smaller pool of its own. */
  readonly readDb: Db;
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

/**
 * Server-side bounds on every session (issue 11: a 45 s table lock hung every send and
 * exhausted the pool). A lock wait ends after 2 s and any statement after 5 s, both as a
 * typed error the pipeline answers `journal_unavailable`; a transaction left idle is ended.
 */
export interface JournalTimeouts {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
  idleInTransactionMs: number;
}
export const DEFAULT_JOURNAL_TIMEOUTS: JournalTimeouts = {
  lockTimeoutMs: 2_000,
  statementTimeoutMs: 5_000,
  idleInTransactionMs: 10_000,
};
/** Past the server's statement timeout, how long more the controller waits for any answer. */
const ANSWER_SLACK_MS = 2_000;
const WRITE_POOL = 16;
const READ_POOL = 4;

export async function openDatabase(
  target: DatabaseTarget,
  timeouts: JournalTimeouts = DEFAULT_JOURNAL_TIMEOUTS,
): Promise<Database> {
  return "url" in target ? openPostgres(target.url, timeouts) : openPglite(target.dataDir);
}

async function openPostgres(given: string, timeouts: JournalTimeouts): Promise<Database> {
  const { default: postgres } = await import("postgres");
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const { migrate } = await import("drizzle-orm/postgres-js/migrator");
  const location = redactDatabaseUrl(given);
  // Behind a pooler (pool_mode=…, pooled-client.ts): nothing session-bound, the timeouts per transaction.
  const { url, poolMode } = poolerTarget(given);
  const pooled = poolMode !== undefined;
  const hostChoice = writableHostOption(url);
  const deadlineMs = timeouts.statementTimeoutMs + ANSWER_SLACK_MS;
  const migrator = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 5,
    ...hostChoice,
    ...(pooled ? { prepare: false } : {}),
  });
  const probe = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: Math.ceil(deadlineMs / 1000),
    ...hostChoice,
    ...(pooled ? { prepare: false } : {}),
  });
  try {
    await whileServerAnswers(probe, deadlineMs, async () => {
      if (pooled)
        return migrateInOneTransaction(migrator, MIGRATION_LOCK_KEY, (client) =>
          migrate(drizzle(client), { migrationsFolder }),
        );
      await migrator`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
      await migrate(drizzle(migrator), { migrationsFolder });
    });
  } catch (e) {
    await migrator.end({ timeout: 1 }).catch(() => {});
    throw new DatabaseUnreachableError(`cannot open PostgreSQL at ${location}: ${(e as Error).message}`, e);
  }
  await migrator.end({ timeout: 5 });
  const connection = pooled
    ? { application_name: "clankie-controller" }
    : {
        lock_timeout: timeouts.lockTimeoutMs,
        statement_timeout: timeouts.statementTimeoutMs,
        idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
        application_name: "clankie-controller",
      };
  const options = {
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: reconnectBackoffSeconds,
    connection,
    ...hostChoice,
    ...(pooled ? { prepare: false } : {}),
  };
  const rawClient = postgres(url, { max: WRITE_POOL, ...options });
  const rawReader = postgres(url, { max: READ_POOL, ...options });
  const client = pooled ? timeoutsPerTransaction(rawClient, timeouts) : rawClient;
  const reader = pooled ? timeoutsPerTransaction(rawReader, timeouts) : rawReader;
  // A server that answers nothing at all is not bounded by its own timeouts (answer-deadline.ts):
  // the hot path's statements get the deadline where they run, drizzle's statements and
  // transactions here.
  const db = drizzle({ client: boundStatements(client, deadlineMs), schema }) as unknown as Db;
  const readDb = drizzle({ client: boundStatements(reader, deadlineMs), schema }) as unknown as Db;
  for (const handle of [db, readDb]) {
    setAnswerDeadline(handle, deadlineMs);
    boundTransactions(handle);
  }
  return {
    db,
    readDb,
    driver: "postgres",
    location,
    ping: async () => {
      await db.execute(sql`select 1`);
    },
    close: async () => {
      await Promise.all([rawClient.end({ timeout: 5 }), rawReader.end({ timeout: 5 })]);
    },
  };
}

async function openPglite(dataDir: string): Promise<Database> {
  mkdirSync(dataDir, { recursive: true });
  const lock = lockDataDir(`${dataDir}.lock`);
  try {
    // initdb in a child: its memory leaves with it (init-pglite.ts).
    if (!isInitialised(dataDir)) await initialiseInChild(dataDir);
    // PGlite is a 9 MB WebAssembly module. V8 compiles it with Liftoff, then recompiles the hot
    // functions with TurboFan in the background; that second tier cost ~60 MB of RSS and more
    // CPU than it saved over 15,000 journal statements (measured, ADR 0015). Wasm only: the
    // process's JavaScript still tiers up as usual. Set before the module is compiled.
    setFlagsFromString("--liftoff-only");
    // The embedded journal's memory budget (shared/heap-budget.ts): the CLI sets this before the
    // controller's modules load; here for any other process that opens the embedded journal.
    keepYoungGenerationSmall();
    const { PGlite } = await import("@electric-sql/pglite");
    const { drizzle } = await import("drizzle-orm/pglite");
    const { migrate } = await import("drizzle-orm/pglite/migrator");
    // The journal's working set is small: PostgreSQL's default 128 MB of shared buffers would
    // sit in the controller's own memory (PGlite runs in-process), ~130 MB of RSS for nothing.
    // 4 MB (512 pages) cost no more CPU than 16 MB over 8,000 statements and ~12 MB less RSS.
    const pg = await PGlite.create(dataDir, { postgresqlconf: ["shared_buffers = 4MB"] });
    const db = drizzle(pg, { schema });
    await migrate(db, { migrationsFolder });
    return {
      db: db as unknown as Db,
      // One in-process engine: there is no pool to starve.
      readDb: db as unknown as Db,
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
