/**
 * `node [--liftoff-only] dist/bench/profile/pglite-memory.js [--conf "shared_buffers = 4MB"] [--n 8000]`:
 * what an open PGlite cluster costs this process (ADR 0015's addendum). Initialises a scratch data
 * directory in a child (as `clankie up` does), opens it with the given settings, runs N small
 * inserts and reads, and prints RSS at open and after, and the CPU the statements took.
 * V8 flags go on the node command line; `CLANKIE_V8_FLAGS` sets them at run time instead, as
 * controller/db/open.ts does.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { initialiseInChild } from "../../controller/db/init-pglite.js";
import { removeScratch, scratchDir } from "../paths.js";
import { runTool } from "../tool-main.js";

const rssMb = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]) / 1024);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { conf: { type: "string" }, n: { type: "string" } } });
  if (process.env.CLANKIE_V8_FLAGS) setFlagsFromString(process.env.CLANKIE_V8_FLAGS);
  const n = Number(values.n ?? 8000);
  const conf = (values.conf ?? "shared_buffers = 4MB").split(";").filter(Boolean);
  const dir = scratchDir("pglite-memory");
  try {
    const dataDir = join(dir, "pgdata");
    await initialiseInChild(dataDir);
    const before = rssMb();
    const { PGlite } = await import("@electric-sql/pglite");
    const pg = await PGlite.create(dataDir, { postgresqlconf: conf });
    const open = rssMb();
    await pg.query("create table t (id serial primary key, v text)");
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await pg.query("insert into t (v) values ($1)", [`row ${i} ${"x".repeat(200)}`]);
    for (let i = 0; i < n / 40; i++) await pg.query("select count(*) from t");
    const cpu = process.cpuUsage(cpu0);
    console.log(
      JSON.stringify({
        execArgv: process.execArgv,
        v8_flags: process.env.CLANKIE_V8_FLAGS ?? "",
        conf,
        statements: n + n / 40,
        rss_mb_before: before,
        rss_mb_open: open,
        rss_mb_after: rssMb(),
        cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
        load_average: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
      }),
    );
    await pg.close();
  } finally {
    removeScratch(dir);
  }
}

runTool(main);
