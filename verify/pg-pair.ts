/**
 * A private PostgreSQL primary with a streaming standby, for the HA run (issue 34 item 5): `initdb`,
 * then `pg_basebackup -R` of it on a second port. The controllers reach them through one multi-host URL
 * with `target_session_attrs=read-write`, so whichever of the two ports is the primary takes the writes.
 * `failover()` crashes the primary (SIGKILL) and promotes the standby (`pg_ctl promote`). No new standby
 * is made after it: one of the old primary's port, listed first in the URL, would take the controllers'
 * connections (see `ports` below), so the HA schedule ends with the promotion. Run as the `postgres` user (initdb refuses root), removed at the end.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "./ports.js";

const BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Node {
  port: number;
  data: string;
  server?: ChildProcess;
}

export interface PgPair {
  /** postgres://…:A,…:B/<db>?target_session_attrs=read-write */
  url(database: string): string;
  /** The primary's own URL (for setup: create database). */
  primaryUrl(database: string): string;
  primaryPort(): number;
  /** SIGKILL the primary, `pg_ctl promote` the standby; resolves at the promotion (performance.now()). */
  failover(): Promise<{ promotedAt: number }>;
  stop(): Promise<void>;
}

function pgUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync("id", [flag, "postgres"], { encoding: "utf8" }).stdout.trim());
  return { uid: id("-u"), gid: id("-g") };
}

export async function startPgPair(): Promise<PgPair> {
  const user = pgUser();
  const dir = mkdtempSync(join(tmpdir(), "c34-verify-pg-"));
  chownSync(dir, user.uid, user.gid);
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(join(BIN, cmd), args, { uid: user.uid, gid: user.gid, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  };
  let generation = 0;
  const start = async (n: Node) => {
    const args = [
      "-D",
      n.data,
      "-p",
      String(n.port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "max_connections=300",
      "-c",
      "shared_buffers=64MB",
      "-c",
      "fsync=off",
      "-c",
      "hot_standby=on",
      "-c",
      "wal_keep_size=256MB",
    ];
    const s = spawn(join(BIN, "postgres"), args, { uid: user.uid, gid: user.gid, stdio: "ignore" });
    n.server = s;
    for (let i = 0; i < 300; i++) {
      if (s.exitCode !== null) throw new Error(`private PostgreSQL on ${n.port} exited with ${s.exitCode}`);
      if (spawnSync(join(BIN, "pg_isready"), ["-h", "127.0.0.1", "-p", String(n.port), "-q"]).status === 0) return;
      await sleep(100);
    }
    throw new Error(`private PostgreSQL on ${n.port} did not start in 30 s`);
  };
  const kill = async (n: Node, signal: NodeJS.Signals) => {
    const s = n.server;
    if (!s || s.exitCode !== null || s.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      s.once("exit", () => resolve());
      s.kill(signal);
    });
  };
  const backup = async (from: Node, port: number): Promise<Node> => {
    const data = join(dir, `data-${++generation}`);
    run("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(from.port),
      "-U",
      "postgres",
      "-D",
      data,
      "-R",
      "-X",
      "stream",
      "--no-sync",
    ]);
    const n: Node = { port, data };
    await start(n);
    return n;
  };

  // Synchronous replication: a commit the primary acknowledged is on the standby too, so a promotion loses
  // no acknowledged receipt (docs/operations.md). A primary without a standby must not wait for one.
  const synchronous = async (n: Node, on: boolean) => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${n.port}/postgres`, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(
        on ? "alter system set synchronous_standby_names = '*'" : "alter system reset synchronous_standby_names",
      );
      await sql.unsafe("select pg_reload_conf()");
    } finally {
      await sql.end();
    }
  };
  let primary: Node = { port: await freePort(), data: join(dir, "data-0") };
  run("initdb", ["-D", primary.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  await start(primary);
  let standby: Node | undefined = await backup(primary, await freePort());
  await synchronous(primary, true);
  // The primary first: postgres.js 3.4.9 with target_session_attrs=read-write takes a hot standby listed
  // before the primary (it reads default_transaction_read_only, which is off on a standby).
  const ports = [primary.port, standby.port];

  return {
    url: (db) =>
      `postgres://postgres@${ports.map((p) => `127.0.0.1:${p}`).join(",")}/${db}?target_session_attrs=read-write`,
    primaryUrl: (db) => `postgres://postgres@127.0.0.1:${primary.port}/${db}`,
    primaryPort: () => primary.port,
    async failover() {
      if (!standby) throw new Error("no standby to promote");
      await kill(primary, "SIGKILL");
      // The crashed primary's data stays until stop() removes the whole directory. Removed here, 5 s
      // after the promotion (rmSync), it blocked this process's event loop, which runs the agents' link
      // relays and the leads, for up to 1 s: bench:ha's fairness section, which starts about then,
      // timed that stall as one delivery (issue 34: max wait 3.1x the mean, "always early").
      primary = standby;
      standby = undefined;
      run("pg_ctl", ["promote", "-D", primary.data, "-w", "-t", "60"]);
      const promotedAt = performance.now();
      await synchronous(primary, false);
      return { promotedAt };
    },
    async stop() {
      if (standby) await kill(standby, "SIGINT");
      await kill(primary, "SIGINT");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
