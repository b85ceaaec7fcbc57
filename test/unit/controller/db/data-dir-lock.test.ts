import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lockDataDir } from "../../../../controller/db/data-dir-lock.js";
import { StateDirLockedError } from "../../../../shared/errors.js";
import { tempDir } from "../../../kit/test-db.js";

describe("data-dir-lock.lockDataDir", () => {
  it("only one process opens the embedded database", () => {
    const path = join(tempDir("lock"), "pgdata.lock");
    // A live process other than us holds it: our parent (the test runner) is alive.
    writeFileSync(path, String(process.ppid));
    expect(() => lockDataDir(path)).toThrow(StateDirLockedError);
  });
  it("takes over a lock left by a dead process, and releases it", () => {
    const path = join(tempDir("lock"), "pgdata.lock");
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    }).stdout;
    writeFileSync(path, dead);
    const lock = lockDataDir(path);
    expect(existsSync(path)).toBe(true);
    lock.release();
    expect(existsSync(path)).toBe(false);
  });
});
