/**
 * No import cycles anywhere in the sources (shared/, the programs' folders, bench/),
 * counting type-only imports too: a walk over the relative-import graph that reports every
 * cycle it finds as a chain of files.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DIRS = ["shared", "controller", "node-agent", "cli", "bridge", "worker", "bench"];

function sources(): string[] {
  return DIRS.filter((d) => existsSync(join(ROOT, d))).flatMap((d) =>
    readdirSync(join(ROOT, d), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts") && !f.includes("gen/"))
      .map((f) => join(d, f)),
  );
}

/** Relative imports of a file, resolved to repository paths of .ts sources. */
function edges(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
  return [
    ...text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^"'`;]*?from\s*["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g,
    ),
  ]
    .map((m) => (m[1] ?? m[2])!)
    .map((spec) => relative(ROOT, join(ROOT, dirname(file), spec)).replace(/\.js$/, ".ts"))
    .filter((target) => existsSync(join(ROOT, target)));
}

export function findCycles(files: string[], edgesOf: (f: string) => string[]): string[][] {
  const graph = new Map(files.map((f) => [f, edgesOf(f)]));
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (f: string) => {
    state.set(f, "open");
    stack.push(f);
    for (const next of graph.get(f) ?? []) {
      if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of files) if (!state.has(f)) visit(f);
  return cycles;
}

describe("import graph", () => {
  it("the walk finds a cycle when there is one (a → b → a)", () => {
    const g: Record<string, string[]> = { a: ["b"], b: ["a"], c: [] };
    expect(findCycles(Object.keys(g), (f) => g[f]!)).toEqual([["a", "b", "a"]]);
  });

  it("has no import cycles, type-only imports included", () => {
    const cycles = findCycles(sources(), edges).map((c) => c.join(" → "));
    expect(cycles).toEqual([]);
  });
});
