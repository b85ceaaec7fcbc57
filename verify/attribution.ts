/**
 * Which faults produced which answers: each nemesis strike is a window (start of the damage to
 * its heal, plus a settle margin); a first call invoked inside a window is counted under that
 * nemesis by its answer. It shows, for instance, that a partition really cut the agent link
 * (its calls end `info` or `seat_offline`, not `delivered`).
 */
import type { Op } from "./history.js";

export interface NemesisWindow {
  name: string;
  startMs: number;
  endMs: number;
}

/** Calls invoked this long after a heal still meet its after-effects (reconnects, re-registration). */
const SETTLE_MS = 1_000;

export function outcomesByNemesis(history: Op[], windows: NemesisWindow[]): Record<string, Record<string, number>> {
  const invokedAt = new Map<number, number>();
  for (const o of history) if (o.type === "invoke" && o.replayOf === undefined) invokedAt.set(o.op, o.atMs);
  const out: Record<string, Record<string, number>> = {};
  for (const o of history) {
    if (o.type === "invoke" || o.replayOf !== undefined) continue;
    const at = invokedAt.get(o.op);
    if (at === undefined) continue;
    const w = windows.find((x) => at >= x.startMs && at <= x.endMs + SETTLE_MS);
    const key = w?.name ?? "none";
    const kind = `${o.type}:${o.outcome}${o.reason ? `/${o.reason.slice(0, 60)}` : ""}`;
    const bucket = (out[key] ??= {});
    bucket[kind] = (bucket[kind] ?? 0) + 1;
  }
  for (const [k, v] of Object.entries(out)) out[k] = Object.fromEntries(Object.entries(v).sort((a, b) => b[1] - a[1]));
  return out;
}
