/**
 * What `fleet deploy` copies: this installation's compiled code, package.json and only the
 * production packages (from package-lock.json), as one gzipped tar. Each build is stamped so a
 * rerun installs a new release next to the previous one (for --rollback).
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface AgentBundle {
  file: string;
  releaseId: string;
  version: string;
  bytes: number;
}

/** dist/controller/deploy/ → the package root. */
export function packageRoot(): string {
  return fileURLToPath(new URL("../../../", import.meta.url));
}

function productionPackages(root: string): string[] {
  const lock = join(root, "package-lock.json");
  if (!existsSync(lock)) return ["node_modules"];
  const pkgs = (
    JSON.parse(readFileSync(lock, "utf8")) as { packages: Record<string, { dev?: boolean; devOptional?: boolean }> }
  ).packages;
  return Object.entries(pkgs)
    .filter(
      ([path, p]) =>
        path.startsWith("node_modules/") &&
        !p.dev &&
        !p.devOptional &&
        !path.slice("node_modules/".length).includes("/node_modules/"),
    )
    .map(([path]) => path)
    .filter((p) => existsSync(join(root, p)));
}

export function buildAgentBundle(): AgentBundle {
  const root = packageRoot();
  const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;
  const dir = mkdtempSync(join(tmpdir(), "clankie-bundle-"));
  const stamp = join(dir, "deploy-stamp.json");
  writeFileSync(stamp, JSON.stringify({ version, builtAt: new Date().toISOString() }) + "\n");
  const file = join(dir, "agent.tgz");
  execFileSync(
    "tar",
    ["-czf", file, "-C", root, "dist", "package.json", ...productionPackages(root), "-C", dir, "deploy-stamp.json"],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const body = readFileSync(file);
  return {
    file,
    version,
    bytes: body.length,
    releaseId: `${version}-${createHash("sha256").update(body).digest("hex").slice(0, 12)}`,
  };
}
