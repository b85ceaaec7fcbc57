import { defineConfig } from "vitest/config";

// Network namespaces as separate hosts (root, ip, nftables, OpenSSH sshd): `npm run test:netns`.
export default defineConfig({
  test: {
    include: ["test/netns/**/*.test.ts"],
    testTimeout: 300_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
