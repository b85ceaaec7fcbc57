import { defineConfig } from "vitest/config";

// Real harness binaries (npm run harnesses:install), driven by local mock model servers.
export default defineConfig({
  test: {
    include: ["test/harnesses/**/*.test.ts"],
    globalSetup: ["test/kit/global-setup.ts"],
    reporters: ["default", "./test/kit/skip-summary-reporter.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
