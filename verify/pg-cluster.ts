/**
 * A private PostgreSQL cluster the verification run starts itself (never the shared
 * service), so the `database-restart` nemesis can crash and restart it and `pause-database`
 * can stop it. Run as the `postgres` user (initdb refuses root), on a free port, in a temp
 * dir removed at the end. Every backend makes itself a process group leader (setsid, so the
 * postmaster can signal its children's groups), so stopping the server means signalling the
 * postmaster and each of its children.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";

const BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

function pgUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync("id", [flag, "postgres"], { encoding: "utf8" }).stdout.trim());
  return { uid: id("-u"), gid: id("-g") };
}

export interface PgCluster {
  readonly port: number;
  readonly url: string;
  /** Crashes the server (SIGKILL to the postmaster) and starts it again on the same data. */
  crashAndRestart(downMs: number): Promise<void>;
  /** Stops every process of the server (SIGSTOP to its group) for `ms`, then continues them: it answers nothing meanwhile, and its connections stay open. */
  pause(ms: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startPgCluster(): Promise<PgCluster> {
  const user = pgUser();
  const dir = mkdtempSync(join(tmpdir(), "c11-verify-pg-"));
  chownSync(dir, user.uid, user.gid);
  const data = join(dir, "data");
  const init = spawnSync(
    join(BIN, "initdb"),
    ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
    { uid: user.uid, gid: user.gid, encoding: "utf8" },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  let server: ChildProcess | undefined;
  const start = async () => {
    server = spawn(
      join(BIN, "postgres"),
      [
        "-D",
        data,
        "-p",
        String(port),
        "-k",
        dir,
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "max_connections=200",
        "-c",
        "shared_buffers=64MB",
      ],
      { uid: user.uid, gid: user.gid, stdio: "ignore" },
    );
    const started = server;
    for (let i = 0; i < 300; i++) {
      if (started.exitCode !== null) throw new Error(`private PostgreSQL exited with ${started.exitCode}`);
      if (spawnSync(join(BIN, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port), "-q"]).status === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("private PostgreSQL did not start in 30 s");
  };
  const kill = async (signal: NodeJS.Signals) => {
    const s = server;
    if (!s || s.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      s.once("exit", () => resolve());
      s.kill(signal);
    });
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    port,
    url,
    async crashAndRestart(downMs) {
      // SIGKILL to the postmaster: its backends notice and exit; the restart runs crash recovery.
      await kill("SIGKILL");
      await new Promise((r) => setTimeout(r, downMs));
      // Orphaned backends may hold the port for a moment.
      for (let i = 0; i < 50; i++) {
        try {
          await start();
          return;
        } catch (e) {
          if (i === 49) throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    async pause(ms) {
      const pid = server?.pid;
      if (!pid || server?.exitCode !== null) throw new Error("private PostgreSQL is not running");
      // The postmaster first, so it forks no new backend while its children are being stopped.
      process.kill(pid, "SIGSTOP");
      const children = spawnSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
        .stdout.split("\n")
        .filter(Boolean)
        .map(Number);
      const signal = (sig: NodeJS.Signals) => {
        for (const child of children) {
          try {
            process.kill(child, sig);
          } catch {
            // Gone since the listing: nothing to stop or continue.
          }
        }
      };
      signal("SIGSTOP");
      try {
        await new Promise((r) => setTimeout(r, ms));
      } finally {
        signal("SIGCONT");
        process.kill(pid, "SIGCONT");
      }
    },
    async stop() {
      await kill("SIGINT");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
