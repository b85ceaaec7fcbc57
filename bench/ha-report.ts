/** Issue 34's goals judged on a high_availability result (bench/sections/high-availability.ts): met or not, never asserted. */
import { get, goalRows, judge, num, type Goal } from "./report.js";

type Json = Record<string, unknown>;

export function judgeHaGoals(r: Json): Goal[] {
  const at = "high_availability";
  const why = typeof get(r, at) === "object" ? undefined : `not measured: ${String(get(r, at) ?? "section not run")}`;
  const kills = num(r, `${at}.kills`) ?? 0;
  const lossless = (num(r, `${at}.lost`) ?? 0) + (num(r, `${at}.duplicates`) ?? 0);
  const skipped = num(r, `${at}.fair_skipped_turns`);
  const tokensChecked = num(r, `${at}.tokens_checked`);
  const goals = [
    kills >= 5
      ? judge(
          "(34) kill -9 of one of three replicas: gap in delivered messages, p99",
          "≤ 5 s",
          num(r, `${at}.kill_gap_p99_ms`),
          (v) => v <= 5_000,
          " ms",
          why,
        )
      : {
          goal: "(34) kill -9 of one of three replicas: gap in delivered messages, p99",
          target: "≤ 5 s",
          measured: `${num(r, `${at}.kill_gap_p99_ms`) ?? "?"} ms over ${kills} kills (the goal needs ≥ 5)`,
          met: null,
        },
    judge(
      "(34) kill -9 of a replica: agents shown offline",
      "0",
      num(r, `${at}.agents_shown_offline`),
      (v) => v === 0,
      "",
      why,
    ),
    judge("(34) lost + duplicates across every fault", "0", why ? undefined : lossless, (v) => v === 0, "", why),
    judge(
      "(34) SIGSTOP of a replica: its writes after it resumes",
      "0",
      num(r, `${at}.paused_writes_after_resume`),
      (v) => v === 0,
      "",
      why,
    ),
    judge(
      "(34) most deliveries in flight to one seat",
      "1",
      num(r, `${at}.max_in_flight_per_seat`),
      (v) => v <= 1,
      "",
      why,
    ),
    judge(
      "(34) standby promoted: deliveries resume after the promotion",
      "≤ 30 s",
      num(r, `${at}.resume_after_promotion_ms`),
      (v) => v <= 30_000,
      " ms",
      why,
    ),
    // ADR 0046: the wait is judged in turns (deliveries waited behind) and each caller's mean in ms; the slowest
    // single call in ms is the box's worst stall, shared by every call in flight, and is reported beside the same
    // callers through one replica, where the turn passes in FIFO order in process.
    judge(
      "(34) 4 callers on each of 2 replicas, one seat: max wait ÷ mean wait, in turns (deliveries waited behind)",
      "≤ 2×",
      num(r, `${at}.fair_max_over_mean_turns`),
      (v) => v <= 2,
      "×",
      why,
    ),
    judge(
      "(34) … each caller's mean wait ÷ mean wait, in ms",
      "≤ 2×",
      num(r, `${at}.fair_worst_caller_mean_over_mean`),
      (v) => v <= 2,
      "×",
      why,
    ),
    slowestCall(r, at, why),
    judge("(34) … turns skipped (delivery order against admission order)", "0", skipped, (v) => v === 0, "", why),
    judge(
      "(34) … most deliveries a call waited behind (admitted before it)",
      "≤ 7 (the other callers)",
      num(r, `${at}.fair_max_turns_waited`),
      (v) => v <= 7,
      "",
      why,
    ),
    judge(
      "(34) lead and owner tokens valid on every replica",
      `${tokensChecked ?? "all"} of ${tokensChecked ?? "all"}`,
      num(r, `${at}.tokens_valid`),
      (v) => v === tokensChecked,
      "",
      why,
    ),
  ];
  return goals;
}

/** The slowest single call ÷ the mean, in ms, through 2 replicas and through 1: reported, not judged (ADR 0046). */
function slowestCall(r: Json, at: string, why: string | undefined): Goal {
  const two = num(r, `${at}.fair_max_over_mean`);
  const one = num(r, `${at}.fair_one_replica_max_over_mean`);
  return {
    goal: "(34) … slowest call ÷ mean wait, in ms (beside: the same 8 callers through one replica, FIFO in process)",
    target: "reported",
    measured: two === undefined ? (why ?? "not measured") : `${two}× (one replica: ${one ?? "?"}×)`,
    met: null,
    reported: true,
  };
}

export function renderHaTable(r: Json, goals: Goal[]): string {
  const lines = [`high_availability (${String(r.mode)}) at ${String(r.when)}`, "", ...goalRows(goals)];
  return lines.join("\n");
}
