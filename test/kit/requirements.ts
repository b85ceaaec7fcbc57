/**
 * What some suites need from the machine, in one place, so that a suite skips only through
 * `available(...)` and the skip summary (skip-summary-reporter.ts) can say why and how to fix it.
 * In CI (.ci/run) every requirement is provided, and a suite that needs one runs regardless.
 */
import { existsSync } from "node:fs";

export const REQUIREMENTS = {
  postgres: { why: "no PostgreSQL (DATABASE_URL unset)", fix: "set DATABASE_URL=postgres://…" },
  chromium: { why: "no Chromium at /usr/bin/chromium", fix: "apt-get install chromium" },
} as const;
export type Requirement = keyof typeof REQUIREMENTS;

export const CHROMIUM = "/usr/bin/chromium";

export function available(r: Requirement): boolean {
  if (r === "postgres") return Boolean(process.env.DATABASE_URL);
  return existsSync(CHROMIUM) || Boolean(process.env.CI);
}
