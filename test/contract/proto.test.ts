/** The contract gate runs in the suite: buf lint, generated code current, no breaking change against main. */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

describe("proto contract", () => {
  it("lints, matches the committed generated code, and breaks nothing against main", () => {
    const script = fileURLToPath(new URL("../../scripts/check-proto.mjs", import.meta.url));
    const out = execFileSync(process.execPath, [script], { encoding: "utf8" });
    expect(out).toContain("generated code current");
  });
});
