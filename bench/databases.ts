/**
 * PostgreSQL for the bench: DATABASE_URL, else the local server with trust auth. Every
 * section gets its own database, created here and dropped afterwards. When no server
 * answers, the PostgreSQL sections are reported as skipped, not failed.
 */
import { randomBytes } from "node:crypto";
import postgres from "postgres";

export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres";

export function postgresBaseUrl(): string {
  return process.env.DATABASE_URL || DEFAULT_POSTGRES_URL;
}

/** The server's version string, or undefined when it does not answer within a few seconds. */
export async function postgresVersion(base = postgresBaseUrl()): Promise<string | undefined> {
  const sql = postgres(base, { max: 1, onnotice: () => {}, connect_timeout: 3 });
  try {
    const [row] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    return row?.v;
  } catch {
    return undefined;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createScratchDatabase(base = postgresBaseUrl()): Promise<ScratchDatabase> {
  const name = `clankie_bench_${randomBytes(5).toString("hex")}`;
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
