/**
 * What some suites need from the machine, in one place, so that a suite skips only through
 * `available(...)` and the skip summary (skip-summary-reporter.ts) can say why and how to fix it.
 * In CI (.ci/run) every requirement is provided, and a suite that needs one runs regardless: a
 * missing tool there fails its tests instead of skipping them.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

export const REQUIREMENTS = {
  postgres: { why: "no PostgreSQL (DATABASE_URL unset)", fix: "set DATABASE_URL=postgres://…" },
  chromium: { why: "no Chromium at /usr/bin/chromium", fix: "apt-get install chromium" },
  mcs: { why: "no Mono C# compiler (mcs)", fix: "apt-get install mono-mcs" },
  systemd: { why: "no systemd-analyze", fix: "apt-get install systemd" },
  zsh: { why: "no zsh", fix: "apt-get install zsh" },
  pgbouncer: {
    why: "no pgbouncer at /usr/sbin/pgbouncer",
    fix: "apt-get install pgbouncer (its service is never used: the suite runs its own)",
  },
  "pg-server": {
    why: "no PostgreSQL 15 server binaries (initdb, pg_basebackup)",
    fix: "apt-get install postgresql-15",
  },
} as const;
export type Requirement = keyof typeof REQUIREMENTS;

export const CHROMIUM = "/usr/bin/chromium";

// The command whose answer proves a tool requirement is met.
const PROBES: Partial<Record<Requirement, [string, string[]]>> = {
  mcs: ["mcs", ["--version"]],
  systemd: ["systemd-analyze", ["--version"]],
  zsh: ["zsh", ["--version"]],
};

export function available(r: Requirement): boolean {
  if (r === "postgres") return Boolean(process.env.DATABASE_URL);
  if (process.env.CI) return true;
  if (r === "chromium") return existsSync(CHROMIUM);
  if (r === "pgbouncer") return existsSync("/usr/sbin/pgbouncer");
  if (r === "pg-server")
    return existsSync("/usr/lib/postgresql/15/bin/initdb") && existsSync("/usr/lib/postgresql/15/bin/pg_basebackup");
  const [cmd, args] = PROBES[r]!;
  return spawnSync(cmd, args).status === 0;
}
