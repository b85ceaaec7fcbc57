/**
 * Issue 33 item 4: the tree is formatted (Biome, 120 columns) and lint-clean, warnings included, so an
 * unformatted file or a lint finding fails `npm test` (and .ci/run, which runs it). `biome ci` is
 * read-only and checks exactly what biome.json includes.
 */
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../kit/test-db.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIOME = join(ROOT, "node_modules/.bin/biome");

function biomeCi(...paths: string[]): { code: number | null; out: string } {
  const r = spawnSync(BIOME, ["ci", "--error-on-warnings", `--config-path=${ROOT}`, ...paths], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("formatter and linter in the suite (issue 33 item 4)", () => {
  const dir = tempDir("biome");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the check fails on an unformatted file, and on a lint warning, and passes a clean file", () => {
    const clean = join(dir, "clean.ts");
    const unformatted = join(dir, "unformatted.ts");
    const warned = join(dir, "warned.ts");
    writeFileSync(clean, "export const a = 1;\n");
    writeFileSync(unformatted, "export const  a = 1\n");
    writeFileSync(warned, "let b = 2;\nexport { b };\n");
    expect(biomeCi(clean).code).toBe(0);
    const format = biomeCi(unformatted);
    expect(format.code).not.toBe(0);
    expect(format.out).toMatch(/format/);
    const lint = biomeCi(warned);
    expect(lint.code).not.toBe(0);
    expect(lint.out).toMatch(/useConst/);
  });

  it("every file biome.json includes is formatted and lint-clean", () => {
    const r = biomeCi(".");
    expect(r.code, r.out.slice(-4000)).toBe(0);
  });
});
