/**
 * A private pgbouncer (Debian's, /usr/sbin/pgbouncer) in front of the test PostgreSQL, on a free
 * port with its own ini in a temp dir: never the system service. A small server pool
 * (default_pool_size) so that many client connections share few server connections, as in
 * production, and transaction mode really hands one client's statements to several servers.
 * Run as `postgres` (pgbouncer refuses root); `stop()` ends it and removes its dir.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "./pg-standby-pair.js";
import { until } from "./until.js";
import { connect } from "node:net";

export const PGBOUNCER = "/usr/sbin/pgbouncer";

export interface Pgbouncer {
  port: number;
  /** `url` (a database on the server behind) with its host and port replaced by pgbouncer's, and `pool_mode` declared. */
  urlFor(url: string): string;
  log(): string;
  stop(): void;
}

export async function startPgbouncer(
  mode: "transaction" | "session",
  server: { host: string; port: number },
  serverPool = 4,
): Promise<Pgbouncer> {
  const dir = mkdtempSync(join(tmpdir(), "clankie-pgbouncer-"));
  const port = await freePort();
  const ini = join(dir, "pgbouncer.ini");
  const log = join(dir, "pgbouncer.log");
  const pid = join(dir, "pgbouncer.pid");
  writeFileSync(join(dir, "users.txt"), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=${server.host} port=${server.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      `pool_mode = ${mode}`,
      `default_pool_size = ${serverPool}`,
      "max_client_conn = 200",
      `logfile = ${log}`,
      `pidfile = ${pid}`,
      "",
    ].join("\n"),
  );
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  chownSync(dir, uid, Number(execFileSync("id", ["-g", "postgres"]).toString().trim()));
  for (const f of ["pgbouncer.ini", "users.txt"]) chownSync(join(dir, f), uid, -1);
  const cmd =
    userInfo().username === "postgres"
      ? [PGBOUNCER, "-d", ini]
      : ["runuser", "-u", "postgres", "--", PGBOUNCER, "-d", ini];
  execFileSync(cmd[0]!, cmd.slice(1), { stdio: "pipe", timeout: 10_000 });
  const listening = () =>
    new Promise<boolean>((r) =>
      connect(port, "127.0.0.1")
        .once("connect", function (this: import("node:net").Socket) {
          this.destroy();
          r(true);
        })
        .once("error", () => r(false)),
    );
  await until(listening, `pgbouncer listening on ${port}`, 100);
  return {
    port,
    urlFor: (url) => {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      u.searchParams.set("pool_mode", mode);
      return u.toString();
    },
    log: () => (existsSync(log) ? readFileSync(log, "utf8") : ""),
    stop: () => {
      if (existsSync(pid)) {
        try {
          process.kill(Number(readFileSync(pid, "utf8").trim()), "SIGTERM");
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
