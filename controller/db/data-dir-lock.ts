/**
 * PGlite has no directory lock of its own, and a second opener corrupts the data
 * (stack spike §5). We guard the data directory with an exclusive lock file holding
 * the owner's pid; a lock left by a dead process is taken over.
 */
import { isProcessAlive } from "../../shared/process-alive.js";
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { StateDirLockedError } from "../../shared/errors.js";

export interface DataDirLock {
  release(): void;
}

export function lockDataDir(lockPath: string): DataDirLock {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return {
        release: () => {
          try {
            if (readFileSync(lockPath, "utf8") === String(process.pid)) rmSync(lockPath);
          } catch {
            // already gone
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const holder = Number.parseInt(readFileSync(lockPath, "utf8"), 10);
      if (Number.isFinite(holder) && holder !== process.pid && isProcessAlive(holder)) {
        throw new StateDirLockedError(
          `the embedded database at ${lockPath.replace(/\.lock$/, "")} is open in process ${holder}; stop it or use another --state-dir`,
        );
      }
      rmSync(lockPath, { force: true });
    }
  }
  throw new StateDirLockedError(`could not take the lock ${lockPath}`);
}
