/**
 * Once per run: initialise one migrated PGlite data directory (5-9 s of initdb) that every
 * test copies, and insist on PostgreSQL in CI so the PostgreSQL half of the suite can
 * never be skipped there.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../controller/db/open.js";

export default async function setup(project: TestProject): Promise<() => void> {
  if (process.env.CI === "true" && !process.env.DATABASE_URL) {
    throw new Error("CI=true but DATABASE_URL is not set: the PostgreSQL half of the suite must run in CI");
  }
  const root = mkdtempSync(join(tmpdir(), "clankie-template-"));
  const dataDir = join(root, "pgdata");
  const db = await openDatabase({ dataDir });
  await db.close();
  project.provide("pgliteTemplate", dataDir);
  return () => rmSync(root, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
