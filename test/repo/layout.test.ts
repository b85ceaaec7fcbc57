/**
 * House rules the code must keep: each source file opens with a comment saying what it is
 * for, stays under 400 lines, and imports only across allowed boundaries.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SOURCE_DIRS = ["shared", "controller", "node-agent"];

function sources(): string[] {
  return SOURCE_DIRS.flatMap((d) =>
    readdirSync(join(ROOT, d), { recursive: true })
      .map(String)
      // The dashboard's browser modules (.js) keep the same house rules.
      .filter((f) => (f.endsWith(".ts") || f.endsWith(".js")) && !f.startsWith("gen/") && !f.includes("/gen/"))
      .map((f) => join(d, f)),
  ).filter((f) => !f.startsWith("shared/gen/"));
}

function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
}

describe("repository layout", () => {
  const files = sources();

  it("every source file opens with a comment that says what it is for", () => {
    const missing = files.filter((f) => {
      const head = readFileSync(join(ROOT, f), "utf8")
        .replace(/^#!.*\n/, "")
        .trimStart();
      return !head.startsWith("/**") && !head.startsWith("//");
    });
    expect(missing).toEqual([]);
  });

  it("no source file runs over 400 lines", () => {
    const long = files.filter((f) => readFileSync(join(ROOT, f), "utf8").split("\n").length > 400);
    expect(long).toEqual([]);
  });

  it("the node agent loads no database or MCP code (its worker-side tools excepted)", () => {
    const forbidden = /^(drizzle-orm|postgres|@electric-sql\/pglite|@modelcontextprotocol\/sdk)/;
    const bad = files
      .filter((f) => f.startsWith("node-agent/") && !f.startsWith("node-agent/worker/"))
      .flatMap((f) =>
        imports(f)
          .filter((i) => forbidden.test(i))
          .map((i) => `${f} → ${i}`),
      );
    expect(bad).toEqual([]);
  });

  it("shared/ imports neither the controller nor the node agent; the agent never imports the controller", () => {
    const bad = files.flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith("."))
        .map((i) => relative(ROOT, join(ROOT, f, "..", i)))
        .filter(
          (target) =>
            (f.startsWith("shared/") && !target.startsWith("shared/")) ||
            (f.startsWith("node-agent/") && target.startsWith("controller/")),
        )
        .map((t) => `${f} → ${t}`),
    );
    expect(bad).toEqual([]);
  });
});
