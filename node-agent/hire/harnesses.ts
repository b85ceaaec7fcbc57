/** The harnesses hire_agent can start, and where their binaries are found. */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

export const HIRE_HARNESSES = ["codex", "claude", "opencode", "pi"] as const;
export type HireHarness = (typeof HIRE_HARNESSES)[number];

export function isHireHarness(s: string): s is HireHarness {
  return (HIRE_HARNESSES as readonly string[]).includes(s);
}

/** The configured binary, else the first executable `name` on PATH; undefined when the machine lacks it. */
export function findBinary(name: string, configured: string | undefined, path: string | undefined): string | undefined {
  const candidates = configured ? [configured] : (path ?? "").split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here
    }
  }
  return undefined;
}
