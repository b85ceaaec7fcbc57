/**
 * `node dist/bench/micro-sync-latency.js [--n 100] [--pause-ms 25]`: the wall time this machine's disk gives the
 * two durable steps every delivery waits on in sequence (issue 17: what bounds `mcp.p50_ms` and
 * `peer.rtt50.agent_p50_minus_rtt_ms`, measured): the agent's durable mailbox write (the real
 * `writeFileDurablyAsync`: temp file, fsync, rename, directory fsync — rule 14) and one
 * WAL-flushing PostgreSQL commit (a delivery makes two: admission and settle). Alternating, in
 * one run, with the load average; prints p50/p99 of each and their per-delivery sum, each both
 * back to back and after a pause (the idle spell a 50 ms round trip puts before them).
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
import { runTool } from "./tool-main.js";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { n: { type: "string" }, "pause-ms": { type: "string" } } });
  const n = Number(values.n ?? 100);
  const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const loadBefore = load();
  const dir = scratchDir("sync");
  const db = await createScratchDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table sync_probe (id text primary key, body text not null)`;
    // Each step is timed twice per iteration: right after the previous one (a busy box) and after
    // a pause as long as the agent path's idle spell at 50 ms RTT (one way, 25 ms): a virtual
    // disk's sync after an idle spell is slower, and both the mailbox write and the settle commit
    // come right after one.
    const pauseMs = Number(values["pause-ms"] ?? 25);
    const pause = () => new Promise((r) => setTimeout(r, pauseMs));
    const write = { busy: [] as number[], afterPause: [] as number[] };
    const commit = { busy: [] as number[], afterPause: [] as number[] };
    const body = JSON.stringify({ schemaVersion: 1, text: "x".repeat(200) });
    const timeWrite = async () => {
      const t = performance.now();
      await writeFileDurablyAsync(join(dir, `${randomUUID()}.json`), body);
      return performance.now() - t;
    };
    const timeCommit = async () => {
      const t = performance.now();
      await sql`insert into sync_probe (id, body) values (${randomUUID()}, ${body})`;
      return performance.now() - t;
    };
    for (let i = 0; i < n; i++) {
      write.busy.push(await timeWrite());
      commit.busy.push(await timeCommit());
      await pause();
      write.afterPause.push(await timeWrite());
      await pause();
      commit.afterPause.push(await timeCommit());
    }
    const figures = (x: { busy: number[]; afterPause: number[] }) => ({
      busy: summarize(x.busy),
      [`after_${pauseMs}ms_idle`]: summarize(x.afterPause),
    });
    const w = figures(write);
    const c = figures(commit);
    const floor = (k: "busy" | "after") => {
      const pick = (f: ReturnType<typeof figures>) => (k === "busy" ? f.busy : f[`after_${pauseMs}ms_idle`]!);
      return round(pick(w).p50_ms + 2 * pick(c).p50_ms);
    };
    console.log(
      JSON.stringify(
        {
          load_before: loadBefore,
          load_after: load(),
          pause_ms: pauseMs,
          durable_mailbox_write: w,
          postgres_commit: c,
          per_delivery_sync_floor_p50_ms: { busy: floor("busy"), [`after_${pauseMs}ms_idle`]: floor("after") },
        },
        null,
        1,
      ),
    );
  } finally {
    await sql.end();
    await db.drop();
    removeScratch(dir);
  }
}

runTool(main);
