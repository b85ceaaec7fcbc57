/**
 * The Linux proof provider against real processes and sockets: the kernel TCP tuple of the
 * agent's own connection, listeners, private homes, pid reuse, and another user's process.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, closeSync, openSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LinuxProofProvider } from "../../../node-agent/proofs/linux.js";
import { sameHome, sameIdentity, type Fact, type ProcessIdentity } from "../../../node-agent/proofs/provider.js";
import { tempDir } from "../../kit/test-db.js";
import { readReport } from "../../kit/tmux-pane-host.js";
import { connectAccepted } from "../../kit/accepted-connection.js";

const BACKEND = fileURLToPath(new URL("../../kit/proof-processes/backend.mjs", import.meta.url));
const PROBE = fileURLToPath(new URL("../../kit/proof-processes/probe.ts", import.meta.url));
const TSX = fileURLToPath(new URL("../../../node_modules/.bin/tsx", import.meta.url));
const provider = new LinuxProofProvider();
const children: ChildProcess[] = [];
const sockets: Socket[] = [];

afterAll(() => {
  for (const s of sockets) s.destroy();
  for (const c of children) c.kill("SIGKILL");
});

function writableByAll(dir: string): string {
  chmodSync(dir, 0o777);
  return dir;
}

function known<T>(f: Fact<T>): T {
  if (!f.known) throw new Error(`expected a known fact, got unknown ${f.reason}: ${f.detail}`);
  return f.value;
}

async function startBackend(
  env: Record<string, string> = {},
  unix = false,
): Promise<{ identity: ProcessIdentity; port: number; unixPath: string | undefined }> {
  const dir = tempDir("proof-backend");
  const unixPath = unix ? join(dir, "backend.sock") : undefined;
  const child = spawn(process.execPath, [BACKEND, join(dir, "ready.json"), ...(unixPath ? [unixPath] : [])], {
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
  children.push(child);
  const { pid, port } = await readReport<{ pid: number; port: number }>(join(dir, "ready.json"));
  const me = known(await provider.identify(pid));
  return { identity: { pid: me.pid, startTime: me.startTime }, port, unixPath };
}

const connectTo = (port: number) => connectAccepted(port, sockets);

describe("linux.LinuxProofProvider", () => {
  it("the other end of the agent's own TCP connection is held by exactly the backend's process lifetime", async () => {
    const backend = await startBackend();
    const { tuple } = await connectTo(backend.port);
    const peer = known(await provider.connectionPeer(tuple));
    expect(peer.isAgentEnd).toBe(true);
    expect(peer.isComplete).toBe(true);
    expect(peer.peers).toHaveLength(1);
    expect(sameIdentity(peer.peers[0]!, backend.identity)).toBe(true);
  });

  it("who holds the other end is read fresh on every call: after the backend exits, the same connection ends in no process", async () => {
    const dir = tempDir("proof-backend");
    const child = spawn(process.execPath, [BACKEND, join(dir, "ready.json")], { stdio: "ignore" });
    children.push(child);
    const { pid, port } = await readReport<{ pid: number; port: number }>(join(dir, "ready.json"));
    const { socket, tuple } = await connectTo(port);
    expect(known(await provider.connectionPeer(tuple)).peers.map((p) => p.pid)).toEqual([pid]);
    const closed = new Promise((r) => socket.once("close", r));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const after = known(await provider.connectionPeer(tuple));
    expect(after.peers).toEqual([]);
    // Once the agent's own socket is gone, the tuple is no longer claimed as the agent's.
    socket.destroy();
    await closed;
    expect(known(await provider.connectionPeer(tuple)).isAgentEnd).toBe(false);
  });

  it("the other end of the agent's own unix-socket connection is held by exactly the backend, accepted on its listening path", async () => {
    const backend = await startBackend({}, true);
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(backend.unixPath!).once("error", reject);
      s.once("data", () => resolve(s));
    });
    sockets.push(socket);
    const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
    const peer = known(await provider.unixConnectionPeer(fd));
    expect(peer).toMatchObject({ isAgentEnd: true, isComplete: true, peerPath: backend.unixPath });
    expect(peer.peers).toHaveLength(1);
    expect(sameIdentity(peer.peers[0]!, backend.identity)).toBe(true);
    // The same connection, listed from this process's side.
    const me = known(await provider.identify(process.pid));
    const mine = known(await provider.unixConnections({ pid: me.pid, startTime: me.startTime }));
    expect(mine.find((c) => c.peerPath === backend.unixPath)?.peers.map((p) => p.pid)).toEqual([backend.identity.pid]);
    // Who holds the other end is read fresh: once the backend is gone, nobody does (and the
    // agent's own end closes with it).
    socket.pause();
    process.kill(backend.identity.pid, "SIGKILL");
    for (let i = 0; i < 200 && (await provider.identify(backend.identity.pid)).known; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(known(await provider.unixConnectionPeer(fd)).peers).toEqual([]);
  });

  it("a descriptor that is not a socket is not the agent's connection", async () => {
    const fd = openSync(join(tempDir("not-a-socket"), "file"), "w");
    try {
      expect(known(await provider.unixConnectionPeer(fd))).toMatchObject({ isAgentEnd: false, peers: [] });
    } finally {
      closeSync(fd);
    }
  });

  it("a tuple the agent does not hold is not claimed as its own", async () => {
    const backend = await startBackend();
    const { tuple } = await connectTo(backend.port);
    const forged = { ...tuple, localPort: tuple.localPort === 65535 ? 65534 : tuple.localPort + 1 };
    const peer = known(await provider.connectionPeer(forged));
    expect(peer.isAgentEnd).toBe(false);
    expect(peer.peers).toEqual([]);
  });

  it("lists the loopback TCP and unix listeners a process owns, and marks an all-interfaces listener as not loopback", async () => {
    const backend = await startBackend({}, true);
    const set = known(await provider.listeners(backend.identity));
    expect(set.covers).toEqual(["tcp", "unix"]);
    expect(set.listeners).toContainEqual({
      transport: "tcp",
      address: "127.0.0.1",
      port: backend.port,
      isLoopback: true,
    });
    expect(set.listeners).toContainEqual({ transport: "unix", path: backend.unixPath });
    const open = await startBackend({ BACKEND_HOST: "0.0.0.0" });
    expect(known(await provider.listeners(open.identity)).listeners).toContainEqual({
      transport: "tcp",
      address: "0.0.0.0",
      port: open.port,
      isLoopback: false,
    });
  });

  it("reads a process's private home from its environment, so a different home does not match", async () => {
    const home = tempDir("codex-home");
    const other = tempDir("codex-other");
    const backend = await startBackend({ CODEX_HOME: other, CLAUDE_CONFIG_DIR: "", HOME: "/home/worker" });
    const h = known(await provider.home(backend.identity, "codex"));
    expect(h).toEqual({ variable: "CODEX_HOME", path: other });
    expect(sameHome(h.path, home, "linux")).toBe(false);
    expect(known(await provider.home(backend.identity, "claude"))).toEqual({
      variable: "HOME",
      path: "/home/worker/.claude",
    });
  });

  it("ancestry runs from the process up to init, each parent created before its child", async () => {
    const backend = await startBackend();
    const a = known(await provider.ancestry(backend.identity));
    expect(a.broken).toBe(false);
    expect(a.chain[0]!.pid).toBe(backend.identity.pid);
    expect(a.chain[1]!.pid).toBe(process.pid);
    expect(a.chain.at(-1)!.ppid).toBe(0);
    for (let i = 1; i < a.chain.length; i++)
      expect(a.chain[i]!.startTime).toBeLessThanOrEqual(a.chain[i - 1]!.startTime);
  });

  it("pid reuse is caught: the same pid with new start ticks is another identity, and the recorded one reads as pid_gone", async () => {
    const first = spawn("sleep", ["300"], { stdio: "ignore" });
    const pid = first.pid!;
    const recorded = known(await provider.identify(pid));
    first.kill("SIGKILL");
    await new Promise((r) => first.once("exit", r));
    expect(await provider.identify(pid)).toMatchObject({ known: false, reason: "pid_gone" });
    // Start ticks count 10 ms jiffies: let one pass so the respawn cannot share the first's tick.
    await new Promise((r) => setTimeout(r, 30));
    // Make the kernel hand out the same pid again: set its last-allocated pid, then fork at once.
    let reused: number | undefined;
    for (let attempt = 0; attempt < 100 && reused === undefined; attempt++) {
      const script = `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid; sleep 300 >/dev/null 2>&1 & echo $!`;
      const got = Number(execFileSync("sh", ["-c", script], { encoding: "utf8" }).trim());
      if (got === pid) reused = got;
      else process.kill(got, "SIGKILL");
    }
    expect(reused).toBe(pid);
    const now = known(await provider.identify(pid));
    process.kill(pid, "SIGKILL");
    expect(now.pid).toBe(recorded.pid);
    expect(now.startTime).not.toBe(recorded.startTime);
    expect(sameIdentity(now, recorded)).toBe(false);
    expect(await provider.home(recorded, "codex")).toMatchObject({ known: false, reason: "pid_gone" });
    expect(await provider.listeners(recorded)).toMatchObject({ known: false, reason: "pid_gone" });
    expect(await provider.ancestry(recorded)).toMatchObject({ known: false, reason: "pid_gone" });
  });

  it("another user's process is unknown with reason permission for a non-root agent, never an error", async () => {
    const backend = await startBackend({ CODEX_HOME: "/root/.codex-private" });
    const { tuple } = await connectTo(backend.port);
    // The provider runs in a child that dropped to nobody, as an unprivileged agent would.
    const out = execFileSync(
      "setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", TSX, PROBE, JSON.stringify({ ...backend.identity, tuple })],
      {
        encoding: "utf8",
        env: { ...process.env, TMPDIR: writableByAll(tempDir("probe-tmp")) },
      },
    );
    const seen = JSON.parse(out) as Record<string, Fact<unknown>> & { uid: number };
    expect(seen.uid).toBe(65534);
    expect(seen.identify).toMatchObject({ known: true });
    expect(seen.home).toMatchObject({ known: false, reason: "permission" });
    expect(seen.listeners).toMatchObject({ known: false, reason: "permission" });
    // Root's open files are hidden from nobody, so "who holds the other end" cannot be complete.
    expect(seen.connectionPeer).toMatchObject({ known: true, value: { isComplete: false } });
    // And root sees the same process fully.
    expect(known(await provider.home(backend.identity, "codex")).path).toBe("/root/.codex-private");
  });

  it("a process running as another user is fully visible to a root agent", async () => {
    const child = spawn(
      "setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "CODEX_HOME=/nonexistent/codex", "sleep", "300"],
      { stdio: "ignore" },
    );
    children.push(child);
    let entry: Fact<unknown> | undefined;
    // setpriv execs env, which execs sleep: the pid is stable, its name settles on "sleep".
    for (let i = 0; i < 200; i++) {
      entry = await provider.identify(child.pid!);
      if (entry.known && (entry.value as { name: string }).name === "sleep") break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const id = known(entry as Fact<{ pid: number; startTime: number }>);
    expect(known(await provider.home(id, "codex")).path).toBe("/nonexistent/codex");
  });
});
