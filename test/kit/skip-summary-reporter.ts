/**
 * Ends every run with one line saying what was skipped and why: tests skipped because the
 * machine lacks something (requirements.ts; read from each file's `available("…")` calls), the
 * PostgreSQL half of the both-drivers suites when DATABASE_URL is unset, and anything skipped in code.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";
import { available, REQUIREMENTS, type Requirement } from "./requirements.js";

function requirementsOf(file: string): Requirement[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return [...text.matchAll(/available\("(\w+)"\)/g)].map((m) => m[1] as Requirement).filter((r) => r in REQUIREMENTS);
}

export function skipSummary(
  modules: ReadonlyArray<{ file: string; skipped: number }>,
  root: string,
  isAvailable: (r: Requirement) => boolean = available,
): string {
  const byReason = new Map<string, { tests: number; files: string[] }>();
  for (const m of modules) {
    if (m.skipped === 0) continue;
    const missing = requirementsOf(m.file).find((r) => !isAvailable(r));
    const reason = missing ? `${REQUIREMENTS[missing].why}; ${REQUIREMENTS[missing].fix}` : "skipped in code";
    const entry = byReason.get(reason) ?? { tests: 0, files: [] };
    entry.tests += m.skipped;
    entry.files.push(relative(root, m.file));
    byReason.set(reason, entry);
  }
  const parts = [...byReason].map(
    ([reason, e]) => `${e.tests} test${e.tests === 1 ? "" : "s"} (${reason}: ${e.files.join(", ")})`,
  );
  if (!isAvailable("postgres"))
    parts.push("the PostgreSQL half of the both-drivers suites (DATABASE_URL unset: they ran on PGlite only)");
  return parts.length ? `skipped: ${parts.join("; ")}` : "skipped: nothing";
}

export default class SkipSummaryReporter implements Reporter {
  private root = process.cwd();

  onInit(ctx: { config: { root: string } }): void {
    this.root = ctx.config.root;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const modules = testModules.map((m) => ({ file: m.moduleId, skipped: [...m.children.allTests("skipped")].length }));
    process.stdout.write(`\n${skipSummary(modules, this.root)}\n`);
  }
}
