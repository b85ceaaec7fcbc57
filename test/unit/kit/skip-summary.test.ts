/** The skip summary names each skipped test's missing requirement, from the file's own available("…") call, and the PostgreSQL half when DATABASE_URL is unset. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { skipSummary } from "../../kit/skip-summary-reporter.js";

describe("skipSummary", () => {
  const root = mkdtempSync(join(tmpdir(), "c14-skip-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const p = join(root, name);
    writeFileSync(p, text);
    return p;
  };

  it("says which requirement each skipped file lacks, how to get it, and that the PostgreSQL half did not run", () => {
    const dash = file("dash.test.ts", 'describe.runIf(available("chromium"))("x", () => {});');
    const pg = file("pg.test.ts", 'describe.runIf(available("postgres"))("y", () => {});');
    const code = file("todo.test.ts", "it.skip('later', () => {});");
    const ran = file("ran.test.ts", "");
    const line = skipSummary(
      [
        { file: dash, skipped: 4 },
        { file: pg, skipped: 2 },
        { file: code, skipped: 1 },
        { file: ran, skipped: 0 },
      ],
      root,
      () => false,
    );
    expect(line).toBe(
      "skipped: 4 tests (no Chromium at /usr/bin/chromium; apt-get install chromium: dash.test.ts); 2 tests (no PostgreSQL (DATABASE_URL unset); set DATABASE_URL=postgres://…: pg.test.ts); 1 test (skipped in code: todo.test.ts); the PostgreSQL half of the both-drivers suites (DATABASE_URL unset: they ran on PGlite only)",
    );
    expect(line.includes("\n")).toBe(false);
  });

  it("says nothing was skipped when everything was available and ran", () => {
    expect(skipSummary([{ file: file("a.test.ts", 'available("chromium")'), skipped: 0 }], root, () => true)).toBe(
      "skipped: nothing",
    );
  });
});
