/**
 * A real PostgreSQL primary and a streaming standby made on this machine for the failover
 * suites (issue 34 item 5): initdb a primary with wal_level=replica and a replication entry in
 * pg_hba (trust on 127.0.0.1), pg_basebackup -R a standby from it, start both. Replication is
 * synchronous (synchronous_standby_names = '*'): a commit the primary acknowledged is on the
 * standby, so after a failover nothing the controller was told is committed can be missing —
 * with asynchronous replication a receipt acknowledged as delivered could be lost with the
 * primary (docs/operations.md says so). Run as the `postgres` user (the servers refuse root),
 * their data under a temp dir owned by it; `stop()` removes everything.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";

export const PG_BIN = "/usr/lib/postgresql/15/bin";

export interface PgServer {
  port: number;
  dataDir: string;
  /** The postmaster's pid, from postmaster.pid. */
  pid(): number;
}

export interface PgStandbyPair {
  primary: PgServer;
  standby: PgServer;
  /** `postgres://postgres@127.0.0.1:P,127.0.0.1:S/<db>?target_session_attrs=read-write` */
  multiHostUrl(db: string): string;
  /** kill -9 of the primary's postmaster (its backends exit on their own: the postmaster is gone). */
  killPrimary(): void;
  /** `pg_ctl promote -w`: returns once the standby accepts writes. */
  promoteStandby(): void;
  /** Connections the standby has accepted so far (log_connections). */
  standbyConnections(): number;
  stop(): void;
}

/** A free TCP port on 127.0.0.1, asked of the kernel. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const asPostgres = (cmd: string, args: string[], opts: { timeoutMs?: number } = {}): string => {
  const full = join(PG_BIN, cmd);
  const run =
    userInfo().username === "postgres"
      ? execFileSync(full, args, { stdio: "pipe", timeout: opts.timeoutMs ?? 60_000 })
      : execFileSync("runuser", ["-u", "postgres", "--", full, ...args], {
          stdio: "pipe",
          timeout: opts.timeoutMs ?? 60_000,
        });
  return run.toString();
};

function server(port: number, dataDir: string): PgServer {
  return { port, dataDir, pid: () => Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]) };
}

export async function startStandbyPair(): Promise<PgStandbyPair> {
  const root = mkdtempSync(join(tmpdir(), "clankie-pgpair-"));
  const pwUid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const pwGid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  chownSync(root, pwUid, pwGid);
  const [pPort, sPort] = [await freePort(), await freePort()];
  const primary = server(pPort, join(root, "primary"));
  const standby = server(sPort, join(root, "standby"));
  const log = (s: PgServer) => join(root, `${s.port}.log`);
  const started: PgServer[] = [];
  const start = (s: PgServer) => {
    asPostgres("pg_ctl", [
      "-D",
      s.dataDir,
      "-l",
      log(s),
      "-w",
      "-t",
      "60",
      "-o",
      `-p ${s.port} -k ${root} -c listen_addresses=127.0.0.1`,
      "start",
    ]);
    started.push(s);
  };
  const stop = () => {
    for (const s of started) {
      if (existsSync(join(s.dataDir, "postmaster.pid")))
        spawnSync(
          "runuser",
          ["-u", "postgres", "--", join(PG_BIN, "pg_ctl"), "-D", s.dataDir, "-m", "immediate", "-w", "stop"],
          { stdio: "ignore" },
        );
    }
    rmSync(root, { recursive: true, force: true });
  };
  try {
    asPostgres("initdb", ["-D", primary.dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    appendFileSync(
      join(primary.dataDir, "postgresql.conf"),
      [
        "wal_level = replica",
        "max_wal_senders = 5",
        "hot_standby = on",
        "synchronous_standby_names = '*'",
        "fsync = off",
        "shared_buffers = 16MB",
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(primary.dataDir, "pg_hba.conf"),
      ["local all all trust", "host all all 127.0.0.1/32 trust", "host replication all 127.0.0.1/32 trust", ""].join(
        "\n",
      ),
    );
    start(primary);
    asPostgres("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(pPort),
      "-U",
      "postgres",
      "-D",
      standby.dataDir,
      "-R",
      "-X",
      "stream",
      "--no-sync",
    ]);
    // The copy carries the primary's synchronous_standby_names: once promoted, with no standby of
    // its own, its every commit would wait for ever (each held its row locks: lock timeouts on all).
    appendFileSync(join(standby.dataDir, "postgresql.conf"), "synchronous_standby_names = ''\nlog_connections = on\n");
    start(standby);
  } catch (e) {
    const logs = [primary, standby].map((s) => (existsSync(log(s)) ? readFileSync(log(s), "utf8") : "")).join("\n");
    stop();
    throw new Error(`${(e as Error).message}\n${logs}`);
  }
  return {
    primary,
    standby,
    multiHostUrl: (db) =>
      `postgres://postgres@127.0.0.1:${pPort},127.0.0.1:${sPort}/${db}?target_session_attrs=read-write`,
    killPrimary: () => process.kill(primary.pid(), "SIGKILL"),
    promoteStandby: () => void asPostgres("pg_ctl", ["-D", standby.dataDir, "-w", "-t", "60", "promote"]),
    standbyConnections: () => (readFileSync(log(standby), "utf8").match(/connection authorized/g) ?? []).length,
    stop,
  };
}
