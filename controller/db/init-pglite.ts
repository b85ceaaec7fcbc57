/**
 * Initialises an embedded PGlite data directory (initdb and the migrations) in a short-lived
 * child process, so the controller never carries initdb's memory: PGlite's WebAssembly heap
 * grows to ~700 MB during initdb and never shrinks, while opening an initialised directory
 * costs ~190 MB (measured, ADR 0015). Run as `node init-pglite.js DATA_DIR`; the parent holds
 * the data directory's lock meanwhile.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const self = fileURLToPath(import.meta.url);

/** True when the directory already holds a cluster. */
export function isInitialised(dataDir: string): boolean {
  return existsSync(join(dataDir, "PG_VERSION"));
}

/**
 * Initialises `dataDir` in a child process; resolves false (the caller initialises in process)
 * when this module is not compiled JavaScript, as under the test runner.
 */
export async function initialiseInChild(dataDir: string): Promise<boolean> {
  if (!self.endsWith(".js")) return false;
  await promisify(execFile)(process.execPath, [self, dataDir], { timeout: 300_000 });
  return true;
}

async function initialise(dataDir: string, migrationsFolder: string): Promise<void> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { migrate } = await import("drizzle-orm/pglite/migrator");
  const pg = await PGlite.create(dataDir, { postgresqlconf: ["shared_buffers = 16MB"] });
  try {
    await migrate(drizzle(pg), { migrationsFolder });
  } finally {
    await pg.close();
  }
}

if (process.argv[1] === self && process.argv[2]) {
  initialise(process.argv[2], fileURLToPath(new URL("./migrations", import.meta.url))).then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
