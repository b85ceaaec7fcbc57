/**
 * Issue 15 (the Mac: pane proofs inside the 250 ms bound): the macOS provider's shared
 * snapshots, on recorded `ps` and `lsof -F` output through the command-runner seam, with a
 * manual monotonic clock that each recorded command advances (no sleeps, no timed asserts).
 * A whole pane proof forks one socket table, one process table and `ps -E` per process; each
 * fact is stamped when the read it stands on was started; a snapshot answers only while young;
 * absence is concluded only from a read begun after the question; PID reuse and a process gone
 * between the socket read and the table read; a shared connection end; a decoy listener;
 * another user's process; a non-ASCII socket path; and the real socket table recorded here.
 * The macOS files follow lsof(8)/ps(1)'s documented output (no Mac runs here).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DarwinProofProvider, listenersFromLsof, parseLsof } from "../../../../node-agent/proofs/darwin.js";
import {
  LSOF_SOCKETS_ARGS,
  SNAPSHOT_MAX_AGE_MS,
  SNAPSHOT_REUSE_MS,
} from "../../../../node-agent/proofs/darwin-snapshots.js";
import { provePane, type PaneProofRequest } from "../../../../node-agent/proofs/pane-proof.js";
import { judgeFreshness } from "../../../../node-agent/proofs/freshness.js";
import type { CommandResult } from "../../../../node-agent/proofs/run-command.js";
import type { PaneHost } from "../../../../node-agent/panes/pane-host.js";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/proofs/darwin/${name}`, import.meta.url), "utf8");
const ok = (stdout: string): CommandResult => ({ code: 0, stdout, stderr: "", isMissing: false });
const at = (h: number, m: number, s: number) => Date.UTC(2026, 10, 30, h, m, s) / 1000;
/** A stamp within half a millisecond (the clock ticks a little on every reading). */
const near = (ms: number) => expect.closeTo(ms, 0);

/** lstart text of each pid in a ps table, for `ps -E -o lstart=,command= -p PID`. */
const lstarts = (table: string): Record<number, string> =>
  Object.fromEntries(
    table
      .trim()
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .map((t) => [Number(t[0]), t.slice(7, 12).join(" ")]),
  );

/**
 * Answers by command from recorded files; each answer advances the manual clock by `costMs`
 * (a command's cost), and every call is logged with the clock when it was started.
 */
function recorded(opts: { ps?: string[]; sockets?: string[]; costMs?: number; uid?: number } = {}) {
  // Ticks 1/1024 ms per reading (so reads are ordered as they happen); each command adds its cost.
  const clock = { now: 1_000, nowMs: () => (clock.now += 1 / 1024) };
  const calls: { file: string; args: readonly string[]; at: number }[] = [];
  const ps = (opts.ps ?? ["ps-axo.txt"]).map((f) => (f.includes("\n") ? f : fixture(f)));
  const sockets = (opts.sockets ?? ["lsof-sockets-macos.txt"]).map((f) => (f.includes("\n") ? f : fixture(f)));
  let psCount = 0;
  let lsofCount = 0;
  const run = async (file: string, args: readonly string[]): Promise<CommandResult> => {
    calls.push({ file, args, at: clock.now });
    clock.now += opts.costMs ?? 30;
    if (file === "ps" && args[0] === "-E") {
      const pid = Number(args[args.indexOf("-p") + 1]);
      const start = lstarts(ps[Math.min(psCount, ps.length - 1)]!)[pid];
      return start
        ? ok(
            `${start} /opt/homebrew/bin/codex --remote ws://127.0.0.1:4500 HOME=/Users/worker CODEX_HOME=/Users/worker/.codex-seat\n`,
          )
        : { code: 1, stdout: "", stderr: "", isMissing: false };
    }
    if (file === "ps") return ok(ps[Math.min(psCount++, ps.length - 1)]!);
    if (file === "lsof" && args.join(" ") === LSOF_SOCKETS_ARGS.join(" "))
      return ok(sockets[Math.min(lsofCount++, sockets.length - 1)]!);
    return { code: -1, stdout: "", stderr: "", isMissing: true };
  };
  const provider = new DarwinProofProvider(clock, run, opts.uid ?? 0, 777);
  const count = (file: string, first?: string) =>
    calls.filter((c) => c.file === file && (first === undefined || c.args[0] === first)).length;
  return { clock, calls, provider, count, run };
}

const backend = { pid: 4242, startTime: at(9, 51, 12) };
const tui = { pid: 4250, startTime: at(9, 51, 13) };
const tuple = { localAddress: "127.0.0.1", localPort: 61234, remoteAddress: "127.0.0.1", remotePort: 4500 };

/** The pane as the pane host reports it: zsh 700 on ttys003, foreground group 900 holding the two codex processes. */
const host: PaneHost = {
  kind: "tmux",
  listPanes: async () => [{ paneId: "%3", terminalId: "%3", sessionId: "s", title: "", cwd: "", agentStatus: "idle" }],
  processInfo: async (paneId) => ({
    paneId,
    shellPid: 700,
    foregroundProcessGroupId: 900,
    tty: "/dev/ttys003",
    foregroundProcesses: [
      { pid: 4250, name: "codex", argv: [] },
      { pid: 4242, name: "codex", argv: [] },
    ],
  }),
  subscribe: async () => () => {},
};
const request: PaneProofRequest = {
  pane: { paneId: "%3", terminalId: "%3", sessionId: "s" },
  tui,
  backend,
  order: "backend_first",
  harness: "codex",
  home: "/Users/worker/.codex-seat",
  connection: tuple,
};

describe("darwin snapshots: a whole pane proof in a few forks (issue 15)", () => {
  it("a pane proof forks one lsof socket table, one ps table and ps -E per process, and every proof is proven", async () => {
    const r = recorded();
    const proofs = await provePane({ host, provider: r.provider, clock: r.clock }, request);
    expect(Object.fromEntries(proofs.map((p) => [p.kind, p.outcome]))).toEqual({
      pane_identity: "proven",
      process_identity: "proven",
      foreground_ancestry: "proven",
      creation_order: "proven",
      private_home: "proven",
      backend_listener: "proven",
      connection_tuple: "proven",
    });
    expect(r.calls.map((c) => `${c.file} ${c.args[0]}`)).toEqual(["lsof -nP", "ps -axww", "ps -E", "ps -E"]);
  });

  it("each fact is stamped when the read it stands on was started, so the gate counts the snapshot's whole age", async () => {
    const r = recorded({ costMs: 40 });
    const peer = await r.provider.connectionPeer(tuple);
    // lsof started at 1000 and took 40 ms; the holders' ps then 40 more: the fact is 80 ms old now, not 0.
    expect(peer).toMatchObject({
      known: true,
      completedAtMs: near(1_000),
      value: { isAgentEnd: true, peers: [backend], isComplete: true },
    });
    expect(r.clock.now).toBeCloseTo(1_080, 0);
    const listeners = await r.provider.listeners(backend);
    expect(listeners).toMatchObject({ known: true, completedAtMs: peer.completedAtMs });
    const proofs = await provePane({ host, provider: r.provider, clock: r.clock }, request);
    const verdict = judgeFreshness(r.clock, proofs, undefined);
    // The oldest proofs stand on the socket table, read first: their age is everything since lsof was started.
    const lsofStartedAt = r.calls.filter((c) => c.file === "lsof").at(-1)!.at;
    expect(verdict.oldestAgeMs).toBeCloseTo(r.clock.now - lsofStartedAt, 0);
    expect(verdict.ageByKind.get("connection_tuple")).toBe(verdict.oldestAgeMs);
    expect(verdict.ageByKind.get("backend_listener")).toBe(verdict.oldestAgeMs);
  });

  it(`a snapshot answers another fact while it finished under ${SNAPSHOT_REUSE_MS} ms ago and started under ${SNAPSHOT_MAX_AGE_MS} ms ago; a failed read is never kept`, async () => {
    const r = recorded({ ps: ["ps-axo-malformed.txt", "ps-axo.txt"], costMs: 0 });
    expect(await r.provider.identify(4242)).toMatchObject({ known: false, reason: "unsupported" });
    expect(await r.provider.identify(4242)).toMatchObject({ known: true });
    expect(r.count("ps")).toBe(2);
    r.clock.now += SNAPSHOT_REUSE_MS - 0.5;
    expect(await r.provider.ancestry(backend)).toMatchObject({ known: true });
    expect(r.count("ps")).toBe(2);
    r.clock.now += 1;
    expect(await r.provider.ancestry(backend)).toMatchObject({ known: true, completedAtMs: near(r.clock.now) });
    expect(r.count("ps")).toBe(3);
    // A slow read (200 ms) is reused right after it, but never once it started the gate's limit ago.
    const slow = recorded({ costMs: 200 });
    expect(await slow.provider.identify(4242)).toMatchObject({ known: true, completedAtMs: near(1_000) });
    expect(await slow.provider.ancestry(backend)).toMatchObject({ known: true, completedAtMs: near(1_000) });
    expect(slow.count("ps")).toBe(1);
    // 50 ms after it finished, but 250 ms after it started: a new read.
    slow.clock.now = 1_000 + SNAPSHOT_MAX_AGE_MS + 0.5;
    expect(await slow.provider.ancestry(backend)).toMatchObject({
      known: true,
      completedAtMs: near(1_000 + SNAPSHOT_MAX_AGE_MS + 0.5),
    });
    expect(slow.count("ps")).toBe(2);
  });

  it("absence is never concluded from a reused table: a pid not in it is asked of a table started after the question", async () => {
    const without4250 = fixture("ps-axo.txt")
      .split("\n")
      .filter((l) => !l.trimStart().startsWith("4250 "))
      .join("\n");
    const r = recorded({ ps: [without4250, "ps-axo.txt"], costMs: 1 });
    expect(await r.provider.identify(4242)).toMatchObject({ known: true });
    expect(await r.provider.identify(4250)).toMatchObject({ known: true, value: tui });
    expect(r.count("ps")).toBe(2);
    // The agent's own connection may be younger than a socket table a listener check just read.
    const noConnection = fixture("lsof-sockets-macos.txt").replace(
      "p777\nf23\ntIPv4\nn127.0.0.1:61234->127.0.0.1:4500\nTST=ESTABLISHED\nTQR=0\nTQS=0\n",
      "p777\n",
    );
    expect(noConnection).not.toContain("61234->");
    const s = recorded({ sockets: [noConnection, "lsof-sockets-macos.txt"], costMs: 1 });
    expect(await s.provider.listeners(backend)).toMatchObject({ known: true });
    expect(await s.provider.connectionPeer(tuple)).toMatchObject({ known: true, value: { isAgentEnd: true } });
    expect(s.count("lsof")).toBe(2);
    // A process with no socket in a reused table may be younger than it: asked of a new one.
    const noTuiSockets = fixture("lsof-sockets-macos.txt").replace(/p4250\n[\s\S]*?(?=p5000\n)/, "");
    expect(noTuiSockets).not.toContain("p4250");
    const t = recorded({ sockets: [noTuiSockets, "lsof-sockets-macos.txt"], costMs: 1 });
    expect(await t.provider.connectionPeer(tuple)).toMatchObject({ known: true });
    expect(await t.provider.listeners(tui)).toMatchObject({
      known: true,
      value: { listeners: [{ transport: "tcp", address: "127.0.0.1", port: 4501, isLoopback: true }] },
    });
    expect(t.count("lsof")).toBe(2);
    // The backend, whose sockets the reused table holds, is answered from it.
    expect(await t.provider.listeners(backend)).toMatchObject({ known: true });
    expect(t.count("lsof")).toBe(2);
  });
  it("bounded: at most one lsof runs at a time; questions asked while it runs share the one read queued after it", async () => {
    const r = recorded({ costMs: 5 });
    const running: Record<string, number> = { ps: 0, lsof: 0 };
    const most: Record<string, number> = { ps: 0, lsof: 0 };
    const provider = new DarwinProofProvider(
      r.clock,
      async (file, args) => {
        running[file]!++;
        most[file] = Math.max(most[file]!, running[file]!);
        await new Promise((resolve) => setImmediate(resolve));
        running[file]!--;
        return r.run(file, args);
      },
      0,
      777,
    );
    const peers = await Promise.all([
      provider.connectionPeer(tuple),
      provider.connectionPeer(tuple),
      provider.connectionPeer(tuple),
      provider.listeners(backend),
    ]);
    expect(peers.every((p) => p.known)).toBe(true);
    expect(r.count("lsof")).toBe(2);
    expect(provider.socketTable.started).toBe(2);
    expect(most).toEqual({ ps: 1, lsof: 1 });
    expect(provider.processTable.started).toBeLessThanOrEqual(2);
  });
});

describe("darwin socket table on recorded output: reuse, races, sharing, decoys, permission", () => {
  it("a pid reused between the socket read and the table read is pid_gone; a holder gone mid-read leaves the connection incomplete", async () => {
    expect(await recorded({ ps: ["ps-axo-4242-reused.txt"] }).provider.listeners(backend)).toMatchObject({
      known: false,
      reason: "pid_gone",
    });
    const gone = await recorded({ ps: ["ps-axo-4242-gone.txt"] }).provider.connectionPeer(tuple);
    expect(gone).toMatchObject({ known: true, value: { isAgentEnd: true, peers: [], isComplete: false } });
    const r = recorded({ ps: ["ps-axo-4242-gone.txt"] });
    const proofs = await provePane({ host, provider: r.provider, clock: r.clock }, request);
    expect(proofs.find((p) => p.kind === "connection_tuple")).toMatchObject({ outcome: "unknown" });
  });

  it("a connection end inherited by a second process: both are holders, so the pane proof refutes", async () => {
    const r = recorded({ sockets: ["lsof-sockets-shared-macos.txt"] });
    expect(await r.provider.connectionPeer(tuple)).toMatchObject({
      known: true,
      value: { peers: [backend, tui], isComplete: true },
    });
    const proofs = await provePane(
      { host, provider: recorded({ sockets: ["lsof-sockets-shared-macos.txt"] }).provider, clock: r.clock },
      request,
    );
    expect(proofs.find((p) => p.kind === "connection_tuple")).toMatchObject({ outcome: "refuted" });
  });

  it("listeners are the process's own: a decoy on 4501 is another pid's; a CLOSE_WAIT end is no listener; a non-ASCII socket path is decoded", async () => {
    const r = recorded();
    expect(await r.provider.listeners(tui)).toMatchObject({
      known: true,
      value: { listeners: [{ transport: "tcp", address: "127.0.0.1", port: 4501, isLoopback: true }] },
    });
    expect(await r.provider.listeners(backend)).toMatchObject({
      known: true,
      value: {
        listeners: [
          { transport: "tcp", address: "127.0.0.1", port: 4500, isLoopback: true },
          { transport: "tcp", address: "0.0.0.0", port: 8080, isLoopback: false },
          { transport: "unix", path: "/Users/worker/.codex-seat/app-server.sock" },
          { transport: "unix", path: "/Users/worker/Projekte/café/seat.sock" },
        ],
        covers: ["tcp", "unix"],
      },
    });
  });

  it("access denied: another user's listeners are permission for a non-root agent, and its connection holders are never complete", async () => {
    const r = recorded({ uid: 501 });
    expect(await r.provider.listeners({ pid: 1, startTime: at(9, 41, 54) })).toMatchObject({
      known: false,
      reason: "permission",
    });
    expect(await r.provider.connectionPeer(tuple)).toMatchObject({
      known: true,
      value: { peers: [backend], isComplete: false },
    });
  });

  it("the socket table recorded on this Linux host (lsof -nP -w -iTCP -U -F pftnT) parses to its listener, both ends and a non-ASCII unix path", () => {
    const files = parseLsof(fixture("lsof-sockets-recorded.txt"))!;
    const mine = files.filter((f) => f.pid === 2846);
    expect(listenersFromLsof(mine)).toEqual([
      { transport: "tcp", address: "127.0.0.1", port: 51119, isLoopback: true },
      { transport: "unix", path: "/tmp/w15-rec/café-seat.sock" },
    ]);
    expect(mine.filter((f) => f.tcpState === "ESTABLISHED").map((f) => f.name)).toEqual([
      "127.0.0.1:41296->127.0.0.1:51119",
      "127.0.0.1:51119->127.0.0.1:41296",
    ]);
    expect(listenersFromLsof(files.filter((f) => f.pid === 2192))).toEqual([
      { transport: "tcp", address: "127.0.0.1", port: 5432, isLoopback: true },
      { transport: "unix", path: "/var/run/postgresql/.s.PGSQL.5432" },
    ]);
  });
});
