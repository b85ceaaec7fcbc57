/**
 * clankie_build_info's commit (issue 37 item 4): CLANKIE_BUILD_COMMIT when a packager sets a
 * full hash, else HEAD read from the checkout's files — a detached HEAD, a loose ref, a packed
 * ref, and a worktree whose .git is a file pointing into the main repository — else unknown.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildInfo, checkoutCommit } from "../../../../controller/metrics/build-info.js";

const A = "a".repeat(40);
const B = "b".repeat(40);

function repo(): { root: string; git: string } {
  const root = mkdtempSync(join(tmpdir(), "clankie-build-info-"));
  const git = join(root, ".git");
  mkdirSync(join(git, "refs", "heads"), { recursive: true });
  return { root, git };
}

describe("the build's commit", () => {
  it("a detached HEAD is the commit itself", () => {
    const { root, git } = repo();
    writeFileSync(join(git, "HEAD"), `${A}\n`);
    expect(checkoutCommit(root)).toBe(A);
  });

  it("a branch: its loose ref, else its line in packed-refs", () => {
    const { root, git } = repo();
    writeFileSync(join(git, "HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(git, "packed-refs"), `# pack-refs with: peeled\n${B} refs/heads/main\n`);
    expect(checkoutCommit(root)).toBe(B);
    writeFileSync(join(git, "refs", "heads", "main"), `${A}\n`);
    expect(checkoutCommit(root)).toBe(A);
  });

  it("a worktree: .git names its own folder, whose HEAD names a ref kept in the common folder", () => {
    const main = repo();
    const wt = mkdtempSync(join(tmpdir(), "clankie-build-info-wt-"));
    const own = join(main.git, "worktrees", "wt");
    mkdirSync(own, { recursive: true });
    writeFileSync(join(wt, ".git"), `gitdir: ${own}\n`);
    writeFileSync(join(own, "HEAD"), "ref: refs/heads/topic\n");
    writeFileSync(join(own, "commondir"), "../..\n");
    writeFileSync(join(main.git, "refs", "heads", "topic"), `${B}\n`);
    expect(checkoutCommit(wt)).toBe(B);
  });

  it("no checkout: undefined, and the gauge says unknown unless CLANKIE_BUILD_COMMIT names a full hash", () => {
    expect(checkoutCommit(mkdtempSync(join(tmpdir(), "clankie-no-git-")))).toBeUndefined();
    const info = buildInfo("0.1.0", { CLANKIE_BUILD_COMMIT: A.toUpperCase() });
    expect(info).toEqual({ version: "0.1.0", nodeVersion: process.version, commit: A });
    // Not a full hash: ignored, so the checkout (this repository) or "unknown" answers instead.
    expect(buildInfo("0.1.0", { CLANKIE_BUILD_COMMIT: "deadbeef" }).commit).not.toBe("deadbeef");
  });
});
