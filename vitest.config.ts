import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/harnesses/**", "test/netns/**", "**/node_modules/**"],
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
