/**
 * Issue 17 (`memory.up_controller_rss_mb` ≤ 200, the idle agent ≤ 80 MB; ADR 0015 amendment): the
 * young-generation cap takes effect when set at run time, before allocation grows the space —
 * the premise of setting it in the CLI before the controller's modules load. In a fresh Node
 * process (the compiled module, as the CLI runs it), the same allocation leaves the young
 * generation at V8's 2 × 16 MB without the cap and at a few MB with it.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MODULE = fileURLToPath(new URL("../../../dist/shared/young-generation.js", import.meta.url));

function newSpaceMbAfterAllocating(capped: boolean): number {
  const program = `
    ${capped ? `const { keepYoungGenerationSmall } = await import(${JSON.stringify(MODULE)}); keepYoungGenerationSmall();` : ""}
    const { getHeapSpaceStatistics } = await import("node:v8");
    const kept = [];
    for (let i = 0; i < 300000; i++) { const o = { i, s: "x" + i }; if (i % 3 === 0) kept.push(o); }
    const s = getHeapSpaceStatistics().find((x) => x.space_name === "new_space");
    process.stdout.write(String(s.space_size / 2 ** 20) + " " + kept.length);
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8" });
  return Number(out.split(" ")[0]);
}

describe("the young generation's cap (issue 17, ADR 0015)", () => {
  it("issue 17: set at run time before the allocations, it keeps the young generation near its initial size", () => {
    const uncapped = newSpaceMbAfterAllocating(false);
    const capped = newSpaceMbAfterAllocating(true);
    expect(uncapped).toBeGreaterThanOrEqual(16);
    expect(capped).toBeLessThanOrEqual(4);
  });
});
