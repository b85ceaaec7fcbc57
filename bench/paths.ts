/** Where things live, whether the bench runs from bench/ (vitest) or dist/bench/ (npm run bench). */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("cannot find the repository root from " + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

export const REPO_ROOT = findRoot();
/** The compiled CLI: the bench measures the same processes an owner runs. */
export const CLI = join(REPO_ROOT, "dist", "cli", "main.js");
/** Ignored by git (.tmp/): the downloaded openssh-server package lives here between runs. */
export const CACHE_DIR = join(REPO_ROOT, ".tmp", "bench");

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `clankie-bench-${prefix}-`));
}

/** Removes a scratch directory once its processes are gone (PGlite data dirs are ~50 MB each). */
export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
