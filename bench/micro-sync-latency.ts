/**
 * `node dist/bench/micro-sync-latency.js [--n 100]`: the wall time this machine's disk gives the
 * two durable steps every delivery waits on in sequence (issue 17: what bounds `mcp.p50_ms` and
 * `peer.rtt50.agent_p50_minus_rtt_ms`, measured): the agent's durable mailbox write (the real
 * `writeFileDurablyAsync`: temp file, fsync, rename, directory fsync — rule 14) and one
 * WAL-flushing PostgreSQL commit (a delivery makes two: admission and settle). Alternating, in
 * one run, with the load average; prints p50/p99 of each and their per-delivery sum.
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { writeFileDurablyAsync } from "../shared/durable-file.js";
import { createScratchDatabase } from "./databases.js";
import { removeScratch, scratchDir } from "./paths.js";
import { round, summarize } from "./stats.js";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: "string" } } });
  const n = Number(values.n ?? 100);
  const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const loadBefore = load();
  const dir = scratchDir("sync");
  const db = await createScratchDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table sync_probe (id text primary key, body text not null)`;
    const write: number[] = [];
    const commit: number[] = [];
    const body = JSON.stringify({ schemaVersion: 1, text: "x".repeat(200) });
    for (let i = 0; i < n; i++) {
      let t = performance.now();
      await writeFileDurablyAsync(join(dir, `${randomUUID()}.json`), body);
      write.push(performance.now() - t);
      t = performance.now();
      await sql`insert into sync_probe (id, body) values (${randomUUID()}, ${body})`;
      commit.push(performance.now() - t);
    }
    const w = summarize(write);
    const c = summarize(commit);
    console.log(JSON.stringify({ load_before: loadBefore, load_after: load(), durable_mailbox_write: w, postgres_commit: c, per_delivery_sync_floor_p50_ms: round(w.p50_ms + 2 * c.p50_ms) }, null, 1));
  } finally {
    await sql.end();
    await db.drop();
    removeScratch(dir);
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
