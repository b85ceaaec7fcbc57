/**
 * `node dist/verify/recheck.js REPORT.json HISTORY.jsonl`: recomputes a report's replay
 * figures from its history with the current checker (the replay check reads the history
 * only), and marks the report so.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { checkReplays } from "./checker.js";
import type { Op } from "./history.js";

const [reportFile, historyFile] = process.argv.slice(2);
if (!reportFile || !historyFile) throw new Error("usage: recheck REPORT.json HISTORY.jsonl");
const history = readFileSync(historyFile, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Op);
const report = JSON.parse(readFileSync(reportFile, "utf8")) as Record<string, unknown>;
const r = checkReplays(history);
report.replays = r.replays;
report.replay_expired = r.replay_expired;
report.replay_changed = r.replay_changed;
report.examples = { ...(report.examples as Record<string, unknown>), ...r.examples };
report.replays_rechecked_at = new Date().toISOString();
writeFileSync(reportFile, JSON.stringify(report, null, 2) + "\n");
process.stdout.write(
  JSON.stringify({ replays: r.replays, replay_expired: r.replay_expired, replay_changed: r.replay_changed }) + "\n",
);
