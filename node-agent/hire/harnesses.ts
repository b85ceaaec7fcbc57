/** Where the binaries of the harnesses hire_agent starts are found (which ones: harnesses/registry.ts). */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import type { SeatKind } from "../../shared/verdicts.js";

/** A seat kind whose plugin has a hire launcher (harnesses/registry.ts hireKinds). */
export type HireHarness = SeatKind;

/** The configured binary, else the first executable `name` on PATH; undefined when the machine lacks it. */
export function findBinary(name: string, configured: string | undefined, path: string | undefined): string | undefined {
  const candidates = configured
    ? [configured]
    : (path ?? "")
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, name));
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
