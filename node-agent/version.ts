/** The agent's version: the installed package's, so `fleet list` shows what an upgrade put in place. */
import { readFileSync } from "node:fs";

function packageVersion(): string {
  // dist/node-agent/version.js and node-agent/version.ts are both two levels below the package root.
  for (const rel of ["../../package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "clankie-fleet" && pkg.version) return pkg.version;
    } catch {
      // Try the next candidate.
    }
  }
  return "0.0.0-unknown";
}

export const AGENT_VERSION = packageVersion();
