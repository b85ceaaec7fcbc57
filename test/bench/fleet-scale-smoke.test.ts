/**
 * Issue 36 items 1 and 2: the fleet simulator links real agent identities (own join token, own
 * key pair, the agent's own link) to a real `clankie controller` on PostgreSQL, a delivery to a
 * simulated seat writes its mailbox file, a controller restart brings every agent back, and the
 * fleet_scale section writes every documented key. A tiny fleet; no timing is asserted.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: these read result JSON back by path, as any reader of the file would.
import { describe, expect, it } from "vitest";
import { runFleetScale } from "../../bench/sections/fleet-scale.js";
import { judgeFleetScaleGoals, renderFleetScale } from "../../bench/report.js";
import { assertBuilt } from "../kit/cli.js";
import { liveChildren } from "../../bench/processes.js";

const isNum = (v: unknown) => typeof v === "number" && Number.isFinite(v);
const KEYS = [
  "controller_idle_cpu_pct",
  "rss_mb_per_agent",
  "pg_writes_per_s",
  "list_seats_ms",
  "watch_first_ms",
  "delivery_p50_ratio",
  "relink_p50_s",
  "relink_p99_s",
  "lost",
];

describe("fleet_scale smoke (issue 36 items 1 and 2, tiny N, no timing assertions)", () => {
  it("links simulated agents with their own identities, delivers into their mailboxes, relinks them all after a restart", async () => {
    assertBuilt();
    const cfg = {
      sizes: [3],
      seatsPerAgent: 2,
      simProcesses: 2,
      idleWindowS: 2,
      settleS: 1,
      deliveries: 3,
      warmup: 1,
      readSamples: 1,
      relinkTimeoutS: 90,
    };
    const r = await runFleetScale(cfg);
    const at = r.n3 as Record<string, any>;
    for (const k of KEYS) expect(isNum(at[k]), `fleet_scale.n3.${k} = ${JSON.stringify(at[k])}`).toBe(true);
    // Every seat the simulated agents made is the controller's, reported at their registration.
    expect(at.seats_listed).toBe(3 * cfg.seatsPerAgent);
    // The baseline and the N-linked deliveries went through the reverse link into the mailbox.
    expect((r.baseline_1_linked as Record<string, any>).outcomes).toEqual({
      delivered: cfg.warmup * 3 + cfg.deliveries,
    });
    expect(at.delivery.outcomes).toEqual({ delivered: cfg.warmup + cfg.deliveries });
    // After the restart every agent relinked, and every answer is accounted for.
    expect(at.relink_not_back).toBe(0);
    expect(at.lost).toBe(0);
    const byOutcome = at.restart_messages.by_outcome as Record<string, { count: number; landed: number }>;
    expect(Object.values(byOutcome).reduce((a, o) => a + o.count, 0)).toBe(at.restart_messages.sent);
    expect(byOutcome.delivered?.landed ?? 0).toBe(byOutcome.delivered?.count ?? 0);
    // Nothing left running: the controller and the simulator processes are gone.
    expect(liveChildren.size).toBe(0);
    const result = { when: new Date().toISOString(), mode: "test", fleet_scale: r };
    expect(renderFleetScale(result, judgeFleetScaleGoals(result))).toContain("| relink_p99_s |");
  }, 600_000);
});
