/** Issue 32's goals for the front-door section, judged per attack, and the table its runner prints. */
import { ATTACKS } from "./front-door-attacks.js";
import { cell, get, goalRows, judge, num, type Goal } from "./report.js";
import { RSS_BACK_WITHIN_MB } from "./sections/front-door.js";
import { round } from "./stats.js";

type Json = Record<string, unknown>;

function diff(a: number | undefined, b: number | undefined): number | undefined {
  return a !== undefined && b !== undefined ? round(a - b, 1) : undefined;
}

export function judgeFrontDoorGoals(r: Json): Goal[] {
  const goals: Goal[] = [];
  for (const a of ATTACKS) {
    const at = (k: string) => num(r, `front_door.${a}.${k}`);
    const before = at("lead_p99_before_ms");
    const during = at("lead_p99_during_ms");
    const rssBefore = at("rss_before_mb");
    const peak = at("rss_peak_mb");
    const after = at("rss_after_mb");
    const ratio = before && during !== undefined ? round(during / before) : undefined;
    const p99Goal = `${a}: lead p99 during ÷ before`;
    // Every call failed at once (no answer, no timeout): no p99 to compare, and the goal is missed.
    const unanswered = at("lead_timed_during") === 0 && (at("lead_calls_during") ?? 0) > 0;
    goals.push(
      unanswered
        ? { goal: p99Goal, target: "≤ 2×", measured: `no answer (${at("lead_calls_during")} failed)`, met: false }
        : judge(p99Goal, "≤ 2×", ratio, (v) => v <= 2, `× (${during} ms vs ${before} ms)`),
      judge(`${a}: controller RSS peak − before`, "≤ +100 MB", diff(peak, rssBefore), (v) => v <= 100, ` MB (${peak})`),
      judge(
        `${a}: controller RSS ${at("after_window_s") ?? "?"} s after − before`,
        `≤ +${RSS_BACK_WITHIN_MB} MB within 60 s`,
        diff(after, rssBefore),
        (v) => v <= RSS_BACK_WITHIN_MB,
        ` MB (${after} MB)`,
      ),
      judge(`${a}: last proof_stale after the attack's end`, "≤ 2 s", at("proof_stale_after_s"), (v) => v <= 2, " s"),
      judge(`${a}: lead calls failed (error, timeout) during`, "0", at("lead_errors_during"), (v) => v === 0),
    );
  }
  return goals;
}

function counts(v: unknown): string {
  if (!v || typeof v !== "object") return "—";
  const e = Object.entries(v as Record<string, number>);
  return e.length ? e.map(([k, n]) => `${k} ${n}`).join(", ") : "0";
}

/** What the server did with the attack's own traffic, in one line. */
function attackLine(a: string, s: unknown): string {
  const g = (k: string) => cell(get(s, k));
  const by = (k: string) => counts(get(s, k));
  switch (a) {
    case "check_flood":
      return (
        `${g("calls")} Checks (${g("calls_per_s")}/s), statuses ${by("statuses")}, ` +
        `Check p50 ${g("check_latency.p50_ms")} ms`
      );
    case "watch_flood":
      return (
        `${g("attempted")} Watch streams: ${g("accepted")} accepted, ` +
        `${g("refused")} refused (${by("refused_by_reason")}), ${g("unanswered_at_end")} unanswered, ` +
        `${g("held_open_at_end")} held at the end; ${g("connections_opened")} connections ` +
        `(server allows ${g("server_max_streams_per_connection")} streams each), ` +
        `${g("connections_closed_by_server")} closed by the server`
      );
    case "rapid_reset":
      return (
        `${g("streams_reset")} streams reset (${g("resets_per_s")}/s, ${g("bytes_sent")} bytes sent) ` +
        `on ${g("connections_opened")} connections; ${g("connections_closed_by_server")} closed by the server, ` +
        `${g("goaways")} GOAWAY`
      );
    case "slow_headers":
      return (
        `${g("connected")} of ${g("attempted")} slow connections connected, ` +
        `${g("closed_by_server")} closed by the server, held ${g("held_open_mean")} on average ` +
        `(min ${g("held_open_min")}); errors ${by("errors")}`
      );
    default:
      return "";
  }
}

const HEADER = [
  "attack",
  "lead p50/p99 before ms",
  "lead p50/p99 during ms",
  "lead p50/p99 after ms",
  "RSS before/peak/after MB",
  "lead errors during",
  "refusals during",
  "refusals after",
  "last proof_stale after end",
];

export function renderFrontDoorTable(r: Json, goals: Goal[]): string {
  const lines: string[] = [];
  const loads = `load average ${cell(get(r, "machine.loadavg_start"))} → ${cell(get(r, "machine.loadavg_end"))}`;
  lines.push(`Front door under attack (${cell(r.mode)}) at ${cell(r.when)}, ${loads}`, "");
  lines.push(`| ${HEADER.join(" | ")} |`, `|${"---|".repeat(HEADER.length)}`);
  for (const a of ATTACKS) {
    const f = get(r, `front_door.${a}`);
    if (!f || typeof f !== "object") {
      lines.push(`| ${a} | ${cell(f)} |${" |".repeat(HEADER.length - 2)}`);
      continue;
    }
    const g = (k: string) => cell(get(f, k));
    const pair = (w: string) => `${g(`lead_p50_${w}_ms`)} / ${g(`lead_p99_${w}_ms`)}`;
    const row = [
      a,
      pair("before"),
      `${pair("during")} (n ${g("lead_calls_during")})`,
      pair("after"),
      `${g("rss_before_mb")} / ${g("rss_peak_mb")} / ${g("rss_after_mb")}`,
      `${g("lead_errors_during")} (${counts(get(f, "errors_during"))})`,
      counts(get(f, "refusals_during")),
      counts(get(f, "refusals_after")),
      `${g("proof_stale_after_s")} s`,
    ];
    lines.push(`| ${row.join(" | ")} |`);
  }
  lines.push("");
  for (const a of ATTACKS) {
    const s = get(r, `front_door.${a}.attack`);
    if (s && typeof s === "object") lines.push(`- ${a}: ${attackLine(a, s)}`);
  }
  lines.push("", ...goalRows(goals));
  return lines.join("\n");
}
