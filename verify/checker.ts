/**
 * The checker: reads the history and the seats' own records and counts what must be zero.
 * - lost_acknowledged: an `ok` whose id is not in its seat exactly once (0 copies: lost).
 * - duplicates: an id or a text that appears more than once across the seats (an effect twice).
 * - failed_with_effect: a `fail` whose message is in a seat anyway.
 * - info_unlisted: an `info` that is neither reconciled (its receipt settled, and the seat
 *   agreeing with the settled state) nor listed by `clankie seat-delivery list`.
 * - replay_changed: a replay of an id whose first answer was definite that answered differently.
 *   No answer is not a different answer: a transport error, `unavailable` (the journal could not
 *   look the id up) and `expired` (retention dropped the body; counted as replay_expired) are not.
 */
import { writeFileSync } from "node:fs";
import type { InfoResolution, Op, SeatRecord } from "./history.js";

const DELIVERED = new Set(["delivered", "queued", "steered", "started"]);
const NOT_SENT = new Set(["not_sent", "rejected", "none"]);

export interface CheckResult {
  ops: number;
  ok: number;
  fail: number;
  info: number;
  replays: number;
  /** Replays answered `expired`: the id's result body was dropped by retention (the last 1,000 are kept); never redispatched. */
  replay_expired: number;
  duplicates: number;
  lost_acknowledged: number;
  failed_with_effect: number;
  info_reconciled: number;
  info_listed: number;
  info_unlisted: number;
  replay_changed: number;
  examples: Record<string, unknown[]>;
}

export function check(history: Op[], records: SeatRecord[], infos: InfoResolution[]): CheckResult {
  const examples: Record<string, unknown[]> = {};
  const note = (k: string, v: unknown) => ((examples[k] ??= []).length < 5 ? examples[k]!.push(v) : undefined);
  const byId = new Map<string, number>();
  const byText = new Map<string, number>();
  for (const r of records) {
    byId.set(r.deliveryId, (byId.get(r.deliveryId) ?? 0) + 1);
    byText.set(r.text, (byText.get(r.text) ?? 0) + 1);
  }
  let duplicates = 0;
  for (const [id, n] of byId) if (n > 1) duplicates++, note("duplicates", { deliveryId: id, copies: n });
  for (const [text, n] of byText) if (n > 1 && !byId.has(text)) duplicates++, note("duplicates", { text, copies: n });

  const completions = history.filter((o) => o.type !== "invoke");
  const first = new Map<number, Op>();
  for (const o of completions) if (o.replayOf === undefined) first.set(o.op, o);
  let lost = 0;
  let failedWithEffect = 0;
  for (const o of first.values()) {
    const copies = byId.get(o.deliveryId) ?? 0;
    if (o.type === "ok" && copies !== 1)
      lost++, note("lost_acknowledged", { op: o.op, deliveryId: o.deliveryId, copies });
    if (o.type === "fail" && copies > 0)
      failedWithEffect++, note("failed_with_effect", { op: o.op, deliveryId: o.deliveryId, copies });
  }
  let reconciled = 0;
  let listed = 0;
  let unlisted = 0;
  for (const r of infos) {
    const o = first.get(r.op)!;
    const copies = byId.get(o.deliveryId) ?? 0;
    const agrees =
      (DELIVERED.has(r.receiptState) && copies === 1) ||
      (NOT_SENT.has(r.receiptState) && copies === 0) ||
      (r.receiptState === "abandoned-unknown" && copies <= 1);
    if (agrees) reconciled++;
    else if (r.listed) listed++;
    else
      unlisted++, note("info_unlisted", { op: r.op, deliveryId: o.deliveryId, receiptState: r.receiptState, copies });
  }
  const replay = checkReplays(history);
  return {
    ops: first.size,
    ok: [...first.values()].filter((o) => o.type === "ok").length,
    fail: [...first.values()].filter((o) => o.type === "fail").length,
    info: [...first.values()].filter((o) => o.type === "info").length,
    replays: replay.replays,
    replay_expired: replay.replay_expired,
    duplicates,
    lost_acknowledged: lost,
    failed_with_effect: failedWithEffect,
    info_reconciled: reconciled,
    info_listed: listed,
    info_unlisted: unlisted,
    replay_changed: replay.replay_changed,
    examples: { ...examples, ...replay.examples },
  };
}

/** The replay half of the check: it needs the history only. */
export function checkReplays(history: Op[]): {
  replays: number;
  replay_expired: number;
  replay_changed: number;
  examples: Record<string, unknown[]>;
} {
  const examples: Record<string, unknown[]> = { replay_changed: [] };
  const first = new Map<number, Op>();
  for (const o of history) if (o.type !== "invoke" && o.replayOf === undefined) first.set(o.op, o);
  let replays = 0;
  let expired = 0;
  let changed = 0;
  for (const o of history) {
    if (o.type === "invoke" || o.replayOf === undefined) continue;
    if ((o.type === "info" && o.outcome === "transport_error") || o.outcome === "unavailable") continue;
    replays++;
    if (o.outcome === "expired") {
      expired++;
      continue;
    }
    const orig = first.get(o.replayOf);
    if (!orig || orig.type === "info") continue;
    const same = orig.type === o.type && orig.outcome === o.outcome && (orig.reason ?? "") === (o.reason ?? "");
    if (!same) {
      changed++;
      if (examples.replay_changed!.length < 5)
        examples.replay_changed!.push({
          op: o.replayOf,
          deliveryId: o.deliveryId,
          first: [orig.type, orig.outcome, orig.reason],
          replay: [o.type, o.outcome, o.reason],
        });
    }
  }
  return { replays, replay_expired: expired, replay_changed: changed, examples };
}

/** The counts every run must hold at zero; a run adds its own (seat overlaps, writes after a pause). */
interface SafetyCounts {
  ops: number;
  duplicates: number;
  lost_acknowledged: number;
  info_unlisted: number;
  replay_changed: number;
  failed_with_effect: number;
}

/** Writes the report (file and stdout) and answers the run's exit code: 0 when every count is zero and the ops were run. */
export function publishReport(outFile: string, report: SafetyCounts, minOps: number, more: number[] = []): 0 | 1 {
  const text = `${JSON.stringify(report, null, 2)}\n`;
  writeFileSync(outFile, text);
  process.stdout.write(text);
  const bad =
    report.duplicates +
    report.lost_acknowledged +
    report.info_unlisted +
    report.replay_changed +
    report.failed_with_effect +
    more.reduce((a, b) => a + b, 0);
  return bad === 0 && report.ops >= minOps ? 0 : 1;
}
