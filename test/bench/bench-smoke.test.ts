/**
 * The benchmark still runs end to end: the tiny mode (a handful of iterations per section)
 * produces a result file in the shape docs/benchmarks.md and the issue describe. No timing
 * is asserted — figures are only checked to be numbers (or a "skipped: …" reason).
 */
// biome-ignore-all lint/suspicious/noExplicitAny: these read result JSON back by path, as any reader of the file would.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runBench } from "../../bench/bench.js";
import { renderTable, type Goal } from "../../bench/report.js";
import { tempDir } from "../kit/test-db.js";
import { assertBuilt } from "../kit/cli.js";

const isNum = (v: unknown) => typeof v === "number" && Number.isFinite(v);
const skipped = (v: unknown) => typeof v === "string" && v.startsWith("skipped:");

function expectLatency(v: unknown, where: string): void {
  if (skipped(v)) return;
  const o = v as Record<string, unknown>;
  for (const k of ["p50_ms", "p99_ms", "n"])
    expect(isNum(o?.[k]), `${where}.${k} = ${JSON.stringify(o?.[k])}`).toBe(true);
}

describe("benchmark smoke (tiny N, no timing assertions)", () => {
  it("runs every section and writes the result file in the documented shape", async () => {
    assertBuilt();
    const result = await runBench({ mode: "tiny" });
    const dir = tempDir("bench");
    const file = join(dir, "tiny.json");
    writeFileSync(file, JSON.stringify(result, null, 2));
    const r = JSON.parse(readFileSync(file, "utf8")) as Record<string, any>;
    rmSync(dir, { recursive: true, force: true });

    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    expect(Number.isNaN(Date.parse(r.when))).toBe(false);
    expect(typeof r.machine).toBe("object");
    expect(Array.isArray(r.machine.loadavg_start)).toBe(true);

    expectLatency(r.peer.agent, "peer.agent");
    expectLatency(r.peer.ssh, "peer.ssh");
    expect(skipped(r.peer.ssh) || isNum(r.peer.ratio_p50)).toBe(true);
    expectLatency(r.peer.rtt50.agent, "peer.rtt50.agent");
    expectLatency(r.peer.rtt50.ssh, "peer.rtt50.ssh");
    expect(skipped(r.peer.rtt50.ssh) || isNum(r.peer.rtt50.ratio_p50)).toBe(true);

    expectLatency(r.proof_age, "proof_age");
    expect(isNum(r.proof_age.refused)).toBe(true);

    for (const db of ["postgres", "pglite"]) {
      const j = r.journal[db];
      if (skipped(j)) continue;
      for (const level of ["c1", "c4", "c16"]) {
        for (const k of [
          "delivered_per_s",
          "ceiling_per_s",
          "ratio",
          "controller_cpu_ms_per_delivery",
          "agent_cpu_ms_per_delivery",
        ])
          expect(isNum(j[level]?.[k]), `journal.${db}.${level}.${k}`).toBe(true);
      }
    }
    expectLatency(r.mcp, "mcp");
    // Rule 55: the liveness section writes its keys (figures, not timing assertions).
    expect(isNum(r.liveness.offline_detect_s), JSON.stringify(r.liveness)).toBe(true);
    expect(isNum(r.liveness.inflight_uncertain_s)).toBe(true);
    if (!skipped(r.journal.postgres)) expectLatency(r.proof_age.c16, "proof_age.c16");
    // The `clankie up` controller on PGlite after its deliveries (issue 17), with or without PostgreSQL.
    expect(
      isNum(r.memory.up_controller_rss_mb),
      `memory.up_controller_rss_mb = ${JSON.stringify(r.memory.up_controller_rss_mb)}`,
    ).toBe(true);
    if (!skipped(r.memory.pg_memory)) {
      expect(isNum(r.memory.controller_rss_mb_1m_receipts)).toBe(true);
      expect(isNum(r.memory.agent_rss_mb)).toBe(true);
    }
    expect(Array.isArray(r.goals)).toBe(true);
    expect(renderTable(r, r.goals as Goal[])).toContain("| goal | target | measured | met |");
  }, 600_000);
});
