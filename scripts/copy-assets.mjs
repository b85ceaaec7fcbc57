// Copies what the compiled build reads at run time but tsc does not emit: the SQL migrations and the dashboard's files.
import { cpSync, rmSync } from "node:fs";

rmSync("dist/controller/db/migrations", { recursive: true, force: true });
cpSync("controller/db/migrations", "dist/controller/db/migrations", { recursive: true });
// The dashboard's page, script and style are served as they are.
rmSync("dist/controller/dashboard", { recursive: true, force: true });
cpSync("controller/dashboard", "dist/controller/dashboard", { recursive: true });

// The package bin must be executable for npx and global installs.
import { chmodSync } from "node:fs";
chmodSync("dist/cli/main.js", 0o755);

// The Claude Code marketplace and its clankie-worker plugin (`clankie claude install-plugin` adds it from here).
rmSync("dist/integrations/claude", { recursive: true, force: true });
cpSync("integrations/claude", "dist/integrations/claude", { recursive: true });
chmodSync("dist/integrations/claude/clankie-worker/bin/clankie-worker", 0o755);
