/** The package's version, read from its package.json (found upward from this module: source or dist). */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "package.json");
    if (
      existsSync(candidate) &&
      (JSON.parse(readFileSync(candidate, "utf8")) as { name?: string }).name === "clankie-fleet"
    )
      return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error("clankie-fleet's package.json was not found above the CLI");
    dir = up;
  }
}

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
}
