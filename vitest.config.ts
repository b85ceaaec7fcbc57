import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/harnesses/**", "**/node_modules/**"],
    globalSetup: ["test/kit/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two cores here: more workers only make PGlite and the real processes fight.
    maxWorkers: 2,
  },
});
