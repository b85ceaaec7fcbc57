import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

/**
 * Two slices that together run every suite once (harness and network-namespace suites have their own configs):
 * - `npm test`: every suite but LONG_SUITES; a suite written per driver runs on one driver (test/kit/test-db.ts).
 * - `npm run test:long` (CLANKIE_TEST_SLICE=long): LONG_SUITES whole, and the per-driver suites on PGlite when
 *   PostgreSQL is set. CI (.ci/run) runs both.
 * A suite is long when it is slow for what it adds beyond its siblings in `npm test`: the benchmark's own
 * smoke runs, the crash and outage variants beyond the first, the pooler, the 50 s peer budget, a replica
 * paused past its lease, and the operator's whole day on the CLI (cli.test.ts stays).
 */
const LONG_SUITES = [
  "test/bench/bench-smoke.test.ts",
  "test/bench/fleet-scale-smoke.test.ts",
  "test/faults/database-outage-replay.test.ts",
  "test/faults/database-outage-crash.test.ts",
  "test/faults/database-outage-hire-crash.test.ts",
  "test/faults/fleet-tokens-sessions.test.ts",
  "test/integration/pgbouncer.test.ts",
  "test/integration/peer-budget.test.ts",
  "test/e2e/bridge-failover.test.ts",
  "test/e2e/crash-windows.test.ts",
  "test/faults/database-outage-boot.test.ts",
  "test/faults/replica-lease.test.ts",
  "test/e2e/operator-cli.test.ts",
];

const long = process.env.CLANKIE_TEST_SLICE === "long";

/** The suites written once per driver: their other driver's half belongs to the long slice. */
function perDriverSuites(): string[] {
  return readdirSync("test", { recursive: true })
    .map((f) => join("test", String(f)))
    .filter((f) => f.endsWith(".test.ts") && readFileSync(f, "utf8").includes("describe.each(DRIVERS)"));
}

export default defineConfig({
  test: {
    include: long ? [...LONG_SUITES, ...(process.env.DATABASE_URL ? perDriverSuites() : [])] : ["test/**/*.test.ts"],
    exclude: ["test/harnesses/**", "test/netns/**", "**/node_modules/**", ...(long ? [] : LONG_SUITES)],
    globalSetup: ["test/kit/global-setup.ts"],
    // The last line of every run says what was skipped and why.
    reporters: ["default", "./test/kit/skip-summary-reporter.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two cores here: more workers only make PGlite and the real processes fight.
    maxWorkers: 2,
  },
});
