/**
 * Issue 32's benchmark goals as bench/front-door-report.ts judges them, on hand-made result
 * objects (the section itself takes minutes: `npm run bench:front-door`, no smoke test).
 */
import { describe, expect, it } from "vitest";
import { judgeFrontDoorGoals, renderFrontDoorTable } from "../../bench/front-door-report.js";

const calm = {
  lead_p99_before_ms: 50,
  lead_p99_during_ms: 90,
  lead_calls_during: 100,
  lead_timed_during: 100,
  lead_errors_during: 0,
  rss_before_mb: 120,
  rss_peak_mb: 200,
  rss_after_mb: 150,
  after_window_s: 60,
  proof_stale_after_s: 0,
};

function goalsFor(attack: Record<string, unknown>) {
  const front_door = { check_flood: attack, watch_flood: calm, rapid_reset: calm, slow_headers: calm };
  const r = { mode: "full", front_door };
  const goals = judgeFrontDoorGoals(r);
  return { r, goals, of: (prefix: string) => goals.find((g) => g.goal.startsWith(`check_flood: ${prefix}`))! };
}

describe("issue 32 front-door goals", () => {
  it("meets every goal for an attack that changed nothing beyond the bounds", () => {
    const { goals } = goalsFor(calm);
    expect(goals).toHaveLength(20);
    expect(
      goals.every((g) => g.met === true),
      JSON.stringify(goals),
    ).toBe(true);
  });

  it("misses the p99 goal above 2x, the RSS goals beyond +100 MB and +50 MB, and a proof_stale 2 s late", () => {
    const { of } = goalsFor({
      ...calm,
      lead_p99_during_ms: 101,
      rss_peak_mb: 221,
      rss_after_mb: 171,
      proof_stale_after_s: 2.1,
    });
    expect(of("lead p99").met).toBe(false);
    expect(of("lead p99").measured).toContain("2.02×");
    expect(of("controller RSS peak").met).toBe(false);
    expect(of("controller RSS 60 s after").met).toBe(false);
    expect(of("last proof_stale").met).toBe(false);
  });

  it("misses the p99 goal when no lead call was answered during the attack (every one reset)", () => {
    const allReset = { lead_p99_during_ms: null, lead_timed_during: 0, lead_calls_during: 95, lead_errors_during: 95 };
    const { of } = goalsFor({ ...calm, ...allReset });
    expect(of("lead p99")).toMatchObject({ met: false, measured: "no answer (95 failed)" });
    expect(of("lead calls failed").met).toBe(false);
  });

  it("reports a broken attack run as not measured, and prints it in the table", () => {
    const { r, of, goals } = goalsFor("error: the attacker exited with 1" as unknown as Record<string, unknown>);
    expect(of("lead p99").met).toBeNull();
    expect(renderFrontDoorTable(r, goals)).toContain("| check_flood | error: the attacker exited with 1 |");
  });
});
