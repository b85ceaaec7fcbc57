/**
 * Docs that guide (issue 33 item 5): docs/benchmarks.md stays the method and the latest figures,
 * every relative link in README.md and docs/ leads to a file that exists, and the result folders
 * hold only the latest results (older ones live in the commits that made them).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const KEPT_RESULTS = [
  "bench/results/fleet-scale.json",
  "bench/results/front-door.json",
  "bench/results/high-availability-fairness.json",
  "bench/results/high-availability.json",
  "bench/results/latest.json",
  "bench/results/link-pings.json",
  "bench/results/mailbox-session-read.json",
  "bench/results/proof-sources.json",
  "bench/results/rpc-clients.json",
  "verify/results/fuzz.json",
  "verify/results/ha-quick.json",
  "verify/results/latest.json",
  "verify/results/quick.json",
];

function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs"), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f));
  return ["README.md", ...docs];
}

/** Link targets outside fenced code blocks and inline code, which show commands, not links. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith("#"))
    .map((t) => decodeURIComponent(t.replace(/#.*$/, "")));
}

describe("docs that guide (issue 33 item 5)", () => {
  it("docs/benchmarks.md gives the method and the latest figures in under 300 lines", () => {
    const lines = readFileSync(join(ROOT, "docs/benchmarks.md"), "utf8").split("\n").length;
    expect(lines).toBeLessThan(300);
  });

  it("the link finder sees prose links and skips code, URLs and anchors", () => {
    const text = "[a](docs/x.md#y) ![b](img.png) `[c](no.md)` [d](https://e.example) [f](#g)\n```\n[h](i.md)\n```\n";
    expect(relativeLinks(text)).toEqual(["docs/x.md", "img.png"]);
  });

  it("every relative link in README.md and docs/**/*.md resolves to an existing file", () => {
    const broken = markdownFiles().flatMap((file) =>
      relativeLinks(readFileSync(join(ROOT, file), "utf8"))
        .filter((target) => !existsSync(join(ROOT, dirname(file), target)))
        .map((target) => `${file} → ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it("bench/results and verify/results track only the latest result of each kind", () => {
    const git = { cwd: ROOT, encoding: "utf8" } as const;
    const listed = execFileSync("git", ["ls-files", "bench/results", "verify/results"], git);
    const tracked = listed
      .split("\n")
      .filter((f) => f !== "")
      .map((f) => relative(ROOT, join(ROOT, f)));
    expect(tracked.sort()).toEqual(KEPT_RESULTS);
  });

  it(".gitignore ignores no kept result file, so a new run of it stays tracked", () => {
    // check-ignore prints each path a rule ignores (exit 0) and nothing when none is (exit 1).
    const run = spawnSync("git", ["check-ignore", "--no-index", "--stdin"], {
      cwd: ROOT,
      encoding: "utf8",
      input: KEPT_RESULTS.join("\n"),
    });
    expect(run.error).toBeUndefined();
    expect(run.stdout.split("\n").filter((l) => l !== "")).toEqual([]);
  });
});
