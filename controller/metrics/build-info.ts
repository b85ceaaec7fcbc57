/**
 * What `clankie_build_info` says about the running code: the controller's version, Node's, and
 * the git commit when it can be known cheaply — CLANKIE_BUILD_COMMIT (set by a packager), else
 * the checkout the code runs from (read from .git's files, no git process). "unknown" otherwise,
 * e.g. in an npm install, where there is no checkout.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface BuildInfo {
  version: string;
  nodeVersion: string;
  commit: string;
}

const COMMIT = /^[0-9a-f]{40}$/;

export function buildInfo(version: string, env: NodeJS.ProcessEnv = process.env): BuildInfo {
  const fromEnv = env.CLANKIE_BUILD_COMMIT?.trim().toLowerCase();
  const commit = fromEnv && COMMIT.test(fromEnv) ? fromEnv : (checkoutCommit(packageRoot()) ?? "unknown");
  return { version, nodeVersion: process.version, commit };
}

/** controller/metrics/ sits two folders under the package root, in the sources and in dist/ alike. */
function packageRoot(): string {
  let dir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  if (!existsSync(join(dir, "package.json"))) dir = resolve(dir, "..");
  return dir;
}

/** HEAD's commit from a checkout's files: a detached HEAD, a loose or a packed ref; a worktree's .git is a file. */
export function checkoutCommit(root: string): string | undefined {
  try {
    let gitDir = join(root, ".git");
    if (!existsSync(gitDir)) return undefined;
    if (statSync(gitDir).isFile()) {
      const m = /^gitdir: (.+)$/m.exec(readFileSync(gitDir, "utf8"));
      if (!m) return undefined;
      gitDir = resolve(root, m[1]!.trim());
    }
    const head = readFileSync(join(gitDir, "HEAD"), "utf8").trim();
    if (COMMIT.test(head)) return head;
    const ref = /^ref: (.+)$/.exec(head)?.[1];
    if (!ref) return undefined;
    // A worktree keeps its HEAD but shares the refs of the main repository's git directory.
    const commondir = join(gitDir, "commondir");
    const common = existsSync(commondir) ? resolve(gitDir, readFileSync(commondir, "utf8").trim()) : gitDir;
    for (const dir of [gitDir, common]) {
      const loose = join(dir, ref);
      if (existsSync(loose)) return readFileSync(loose, "utf8").trim();
    }
    const packed = readFileSync(join(common, "packed-refs"), "utf8");
    return new RegExp(`^([0-9a-f]{40}) ${ref.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m").exec(packed)?.[1];
  } catch {
    return undefined;
  }
}
