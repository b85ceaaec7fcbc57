/**
 * How the user can run this CLI again, for the lines `clankie up` prints: `clankie` when that
 * name on PATH is this CLI, `npx clankie` inside this package's folder (npm resolves the root
 * package's bin there), otherwise `node <full path>`. Never a name the user's shell cannot find.
 */
import { accessSync, constants, realpathSync } from "node:fs";
import { delimiter, join, relative, isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";
import { packageRoot } from "./version.js";

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return realpathSync(candidate);
    } catch {
      // not here
    }
  }
  return undefined;
}

export function selfCommand(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  const cli = realpathSync(fileURLToPath(new URL("./main.js", import.meta.url)));
  if (onPath("clankie", env) === cli) return "clankie";
  const root = packageRoot();
  const rel = relative(root, cwd);
  if (!rel.startsWith("..") && !isAbsolute(rel)) return "npx clankie";
  return `node ${cli}`;
}
