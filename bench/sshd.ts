/**
 * A real OpenSSH sshd for the legacy-path baseline: Debian's openssh-server, fetched with
 * `apt-get download` and unpacked with `dpkg-deb -x` into an ignored folder (never installed,
 * so no postinst starts anything on port 22), run unprivileged on a free loopback port with
 * its own sshd_config. As root it runs as an ordinary login user, because a non-root sshd
 * needs no privilege-separation user and can log in only as itself.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import ssh2 from "ssh2";
import { CACHE_DIR, removeScratch, scratchDir } from "./paths.js";
import { track } from "./processes.js";

export class SkipError extends Error {}

export interface RunningSshd {
  readonly port: number;
  readonly username: string;
  readonly privateKey: string;
  /** A directory the ssh user may write: the legacy path's inbox lives here. */
  readonly inbox: string;
  /** The sshd listener's pid; it runs as the ssh user, so its /proc entry is readable by the commands. */
  readonly pid: number;
  readonly version: string;
  stop(): Promise<void>;
}

interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

function unpacked(): string {
  const root = join(CACHE_DIR, "openssh");
  const sshd = join(root, "x", "usr", "sbin", "sshd");
  if (existsSync(sshd)) return root;
  const debs = join(root, "debs");
  mkdirSync(debs, { recursive: true });
  try {
    execFileSync("apt-get", ["download", "openssh-server", "libwrap0"], { cwd: debs, stdio: "pipe", timeout: 120_000 });
    for (const f of readdirSync(debs).filter((n) => n.endsWith(".deb")))
      execFileSync("dpkg-deb", ["-x", join(debs, f), join(root, "x")], { stdio: "pipe" });
  } catch (e) {
    throw new SkipError(
      `no OpenSSH sshd: apt-get download openssh-server libwrap0 failed (${(e as Error).message.split("\n")[0]})`,
    );
  }
  if (!existsSync(sshd)) throw new SkipError("no OpenSSH sshd: the unpacked package has no usr/sbin/sshd");
  return root;
}

/** Who sshd runs as: ourselves, or (as root) CLANKIE_BENCH_SSH_USER or the first non-root user with a login shell. */
function runAs(): RunAs {
  const uid = process.getuid?.() ?? 0;
  const users = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .map((l) => l.split(":"))
    .filter((f) => f.length >= 7)
    .map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]), shell: f[6]! }));
  if (uid !== 0) {
    const me = users.find((u) => u.uid === uid);
    return { name: me?.name ?? process.env.USER ?? "nobody", uid, gid: process.getgid?.() ?? uid };
  }
  const wanted = process.env.CLANKIE_BENCH_SSH_USER;
  const loginable = users.filter(
    (u) => u.uid > 0 && !/(nologin|false|sync)$/.test(u.shell) && (wanted ? u.name === wanted : true),
  );
  loginable.sort((a, b) => Number(b.uid >= 1000) - Number(a.uid >= 1000));
  const pick = loginable[0];
  if (!pick)
    throw new SkipError(
      "running as root and no non-root user with a login shell exists for an unprivileged sshd (set CLANKIE_BENCH_SSH_USER)",
    );
  return pick;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function waitForPort(port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new SkipError(`sshd exited with ${child.exitCode}: ${stderr().trim()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const c = connect({ host: "127.0.0.1", port }, () => {
        c.destroy();
        resolve(true);
      });
      c.on("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new SkipError(`sshd did not listen on ${port} within 15 s: ${stderr().trim()}`);
}

export async function startSshd(): Promise<RunningSshd> {
  const root = unpacked();
  const user = runAs();
  const dir = scratchDir("sshd");
  chmodSync(dir, 0o755);
  const port = await freePort();
  const host = ssh2.utils.generateKeyPairSync("ed25519");
  const client = ssh2.utils.generateKeyPairSync("ed25519");
  const inbox = join(dir, "inbox");
  mkdirSync(inbox);
  const files = {
    hostKey: join(dir, "host_ed25519"),
    authorized: join(dir, "authorized_keys"),
    config: join(dir, "sshd_config"),
    pid: join(dir, "sshd.pid"),
  };
  writeFileSync(files.hostKey, host.private, { mode: 0o600 });
  writeFileSync(files.authorized, client.public + "\n", { mode: 0o600 });
  writeFileSync(
    files.config,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${files.hostKey}`,
      `AuthorizedKeysFile ${files.authorized}`,
      `PidFile ${files.pid}`,
      "UsePAM no",
      "StrictModes no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PubkeyAuthentication yes",
      "PermitRootLogin no",
      "UseDNS no",
      // The legacy path keeps one connection open, as the old system's control masters did.
      "MaxSessions 64",
      "LogLevel ERROR",
      "",
    ].join("\n"),
  );
  if ((process.getuid?.() ?? 0) === 0)
    for (const p of [dir, inbox, ...Object.values(files).filter(existsSync)]) chownSync(p, user.uid, user.gid);
  const bin = join(root, "x", "usr", "sbin", "sshd");
  // sshd 9.2 has no -V; the package file name carries the exact version.
  const deb = readdirSync(join(root, "debs")).find((n) => n.startsWith("openssh-server_"));
  const version = deb
    ? `OpenSSH ${decodeURIComponent(deb.split("_")[1] ?? "").replace(/^1:/, "")} (Debian openssh-server)`
    : "OpenSSH (version unknown)";
  // sshd re-executes itself by absolute path for every connection, so it must be given one.
  const child = spawn(bin, ["-D", "-e", "-f", files.config], {
    uid: user.uid,
    gid: user.gid,
    env: {
      LD_LIBRARY_PATH: `${join(root, "x", "usr", "lib", "x86_64-linux-gnu")}:${join(root, "x", "lib", "x86_64-linux-gnu")}`,
      PATH: "/usr/bin:/bin",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  track(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  await waitForPort(port, child, () => stderr);
  return {
    port,
    username: user.name,
    privateKey: client.private,
    inbox,
    pid: child.pid!,
    version,
    stop: async () => {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      });
      removeScratch(dir);
    },
  };
}
