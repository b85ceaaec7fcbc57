/**
 * Issue 15: the macOS provider's shared snapshots on this Linux host's real `ps` and `lsof`
 * (procps and lsof print the same `-o`/`-F` formats; macOS's own tools were not run), with real
 * processes, a real loopback listener and a real connection. The clock is a manual one (it ticks a
 * microsecond per reading) so the
 * reuse window is decided by the test, not by this shared host's load; the commands are real.
 * One real socket table answers the connection and the listener, one real ps table the
 * lifetimes; a whole pane proof forks four commands; a process killed is pid_gone once the
 * window has passed, from tables read after its death.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { DarwinProofProvider } from "../../../node-agent/proofs/darwin.js";
import { SNAPSHOT_REUSE_MS } from "../../../node-agent/proofs/darwin-snapshots.js";
import { runCommand, type CommandRunner } from "../../../node-agent/proofs/run-command.js";
import { provePane } from "../../../node-agent/proofs/pane-proof.js";
import type { PaneHost } from "../../../node-agent/panes/pane-host.js";
import { tempDir } from "../../kit/test-db.js";
import { readReport } from "../../kit/tmux-pane-host.js";
import { connectAccepted } from "../../kit/accepted-connection.js";

const KIT = fileURLToPath(new URL("../../kit/proof-processes/", import.meta.url));
const children: ChildProcess[] = [];
const sockets: Socket[] = [];
afterAll(() => {
  sockets.forEach((s) => s.destroy());
  children.forEach((c) => c.kill("SIGKILL"));
});

async function start(script: "backend.mjs" | "tui.mjs") {
  const out = join(tempDir("c15-snap"), "report.json");
  const child = spawn(process.execPath, [join(KIT, script), out], { stdio: "ignore" });
  children.push(child);
  return { child, ...(await readReport<{ pid: number; port: number }>(out)) };
}

function setup() {
  // Ticks a microsecond per reading, so reads are ordered as they happen; the test moves it past the window.
  const clock = { now: 5_000, nowMs: () => (clock.now += 0.001) };
  const calls: string[] = [];
  const run: CommandRunner = (file, args, options) => (
    calls.push(`${file} ${args[0]}`), runCommand(file, args, options)
  );
  return { clock, calls, provider: new DarwinProofProvider(clock, run, process.getuid!(), process.pid) };
}

describe("darwin snapshots on real ps and lsof (this Linux host)", () => {
  it("one real socket table answers the connection and the backend's listener; one ps table the lifetimes", async () => {
    const b = await start("backend.mjs");
    const { tuple } = await connectAccepted(b.port, sockets);
    const { provider, calls } = setup();
    const id = await provider.identify(b.pid);
    expect(id).toMatchObject({ known: true, value: { pid: b.pid, ppid: process.pid } });
    const backend = id.known ? { pid: b.pid, startTime: id.value.startTime } : { pid: 0, startTime: 0 };
    const peer = await provider.connectionPeer(tuple);
    expect(peer).toMatchObject({ known: true, value: { isAgentEnd: true, peers: [backend], isComplete: true } });
    const listeners = await provider.listeners(backend);
    expect(listeners).toMatchObject({
      known: true,
      completedAtMs: peer.completedAtMs,
      value: {
        listeners: expect.arrayContaining([{ transport: "tcp", address: "127.0.0.1", port: b.port, isLoopback: true }]),
      },
    });
    expect(await provider.ancestry(backend)).toMatchObject({ known: true });
    // identify's table, then the socket table and the table after it that both checks share.
    expect(calls).toEqual(["ps -axww", "lsof -nP", "ps -axww"]);
  });

  it("a whole pane proof forks one lsof, one ps and ps -E per process (procps refuses -E: home unknown, never guessed)", async () => {
    const b = await start("backend.mjs");
    const t = await start("tui.mjs");
    const { tuple } = await connectAccepted(b.port, sockets);
    const { provider, calls, clock } = setup();
    const ids = await Promise.all([b.pid, t.pid].map((pid) => provider.identify(pid)));
    const [backend, tui] = ids.map((f, i) => ({
      pid: [b.pid, t.pid][i]!,
      startTime: f.known ? f.value.startTime : -1,
    }));
    clock.now += SNAPSHOT_REUSE_MS + 1;
    calls.length = 0;
    const host: PaneHost = {
      kind: "herdr",
      listPanes: async () => [
        { paneId: "p", terminalId: "t", sessionId: "s", title: "", cwd: "", agentStatus: "idle" },
      ],
      processInfo: async (paneId) => ({
        paneId,
        shellPid: process.pid,
        foregroundProcessGroupId: -1,
        tty: "",
        foregroundProcesses: [
          { pid: t.pid, name: "tui", argv: [] },
          { pid: b.pid, name: "backend", argv: [] },
        ],
      }),
      subscribe: async () => () => {},
    };
    const proofs = await provePane(
      { host, provider, clock },
      {
        pane: { paneId: "p", terminalId: "t", sessionId: "s" },
        tui: tui!,
        backend: backend!,
        order: "backend_first",
        harness: "codex",
        home: "/nonexistent",
        connection: tuple,
      },
    );
    const outcome = Object.fromEntries(proofs.map((p) => [p.kind, p.outcome]));
    expect(outcome).toMatchObject({
      process_identity: "proven",
      creation_order: "proven",
      backend_listener: "proven",
      connection_tuple: "proven",
      private_home: "unknown",
    });
    expect(calls.sort()).toEqual(["lsof -nP", "ps -E", "ps -E", "ps -axww"]);
  });

  it("a killed backend is pid_gone once the window has passed: both tables are read after its death", async () => {
    const b = await start("backend.mjs");
    const { provider, clock } = setup();
    const id = await provider.identify(b.pid);
    const backend = { pid: b.pid, startTime: id.known ? id.value.startTime : -1 };
    expect(await provider.listeners(backend)).toMatchObject({ known: true });
    const exited = new Promise((r) => b.child.once("exit", r));
    b.child.kill("SIGKILL");
    await exited;
    clock.now += SNAPSHOT_REUSE_MS + 1;
    expect(await provider.listeners(backend)).toMatchObject({ known: false, reason: "pid_gone" });
    expect(await provider.identify(b.pid)).toMatchObject({ known: false, reason: "pid_gone" });
  });
});
