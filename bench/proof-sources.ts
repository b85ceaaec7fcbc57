/**
 * What a proof costs by source, side by side (issue 15): the Linux /proc provider; the macOS
 * command route (ps + lsof -F) run on THIS Linux host's real ps and lsof, which print the same
 * formats (macOS's own tools were not run: no Mac here), both with its shared snapshots and
 * with every fact forking its own commands; a long-lived `lsof -r1` repeat-mode reader;
 * systeminformation's process and connection reads; the Windows provider's long-lived host
 * transport against a stand-in process that answers recorded output (no PowerShell here:
 * transport and parsing only); the same commands through one long-lived /bin/sh. A native libproc route (FFI) cannot run here and is not measured.
 * Each row: per-call ms (p50/p99) and, for whole pane proofs, the wall time, the age of the
 * oldest proof when the last completes, the share of proofs within the 250 ms bound, and the
 * commands forked per proof. Proofs are spaced past the snapshot reuse window, so each starts
 * cold as a lone delivery would. Figures go to bench/results/proof-sources.json.
 * Run: `npm run bench:proof-sources -- [--n N]`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import type { Socket } from "node:net";
import { connect } from "node:net";
import { join } from "node:path";
import { cpus, loadavg } from "node:os";
import si from "systeminformation";
import { DarwinProofProvider } from "../node-agent/proofs/darwin.js";
import { LinuxProofProvider } from "../node-agent/proofs/linux.js";
import { WindowsProofProvider } from "../node-agent/proofs/windows.js";
import { PowerShellHost } from "../node-agent/proofs/windows-host.js";
import { runCommand, type CommandRunner } from "../node-agent/proofs/run-command.js";
import { SNAPSHOT_REUSE_MS } from "../node-agent/proofs/darwin-snapshots.js";
import { FRESHNESS_LIMIT_MS } from "../node-agent/proofs/freshness.js";
import { measureRepeatReader } from "./lsof-repeat-reader.js";
import { measureShellHost } from "./long-lived-shell.js";
import { provePane, type PaneProofRequest } from "../node-agent/proofs/pane-proof.js";
import { systemMonotonicClock, type ProofFact } from "../node-agent/proofs/proof.js";
import type { PaneHost } from "../node-agent/panes/pane-host.js";
import type { ProcessIdentity, ProofProvider } from "../node-agent/proofs/provider.js";
import { REPO_ROOT, scratchDir, removeScratch } from "./paths.js";

const N = Number(process.argv[process.argv.indexOf("--n") + 1]) || 30;
const KIT = join(REPO_ROOT, "test", "kit");
const children: ChildProcess[] = [];
const sockets: Socket[] = [];

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(2));
}

async function time(
  name: string,
  f: () => Promise<unknown>,
  n = N,
): Promise<{ name: string; p50: number; p99: number; n: number }> {
  await f();
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    xs.push(performance.now() - t);
  }
  return { name, p50: pct(xs, 50), p99: pct(xs, 99), n };
}

async function waitFile<T>(path: string): Promise<T> {
  for (let i = 0; i < 500; i++) {
    if (existsSync(path)) return JSON.parse(readFileSync(path, "utf8")) as T;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no ${path}`);
}

async function processes(dir: string) {
  const b = spawn(process.execPath, [join(KIT, "proof-processes", "backend.mjs"), join(dir, "b.json")], {
    stdio: "ignore",
  });
  const t = spawn(process.execPath, [join(KIT, "proof-processes", "tui.mjs"), join(dir, "t.json")], {
    stdio: "ignore",
  });
  children.push(b, t);
  const backend = await waitFile<{ pid: number; port: number }>(join(dir, "b.json"));
  const tui = await waitFile<{ pid: number }>(join(dir, "t.json"));
  const socket = await new Promise<Socket>((resolve) => {
    const s = connect(backend.port, "127.0.0.1");
    s.once("data", () => resolve(s));
  });
  sockets.push(socket);
  const tuple = {
    localAddress: socket.localAddress!,
    localPort: socket.localPort!,
    remoteAddress: socket.remoteAddress!,
    remotePort: socket.remotePort!,
  };
  return { backend, tui, tuple };
}

async function idOf(p: ProofProvider, pid: number): Promise<ProcessIdentity> {
  const f = await p.identify(pid);
  if (!f.known) throw new Error(f.detail);
  return { pid, startTime: f.value.startTime };
}

/** A pane host whose shell is this process: the two children are its foreground, as in a pane. */
function hostFor(tuiPid: number, backendPid: number): PaneHost {
  return {
    kind: "herdr",
    listPanes: async () => [{ paneId: "p", terminalId: "t", sessionId: "s", title: "", cwd: "", agentStatus: "idle" }],
    processInfo: async (paneId) => ({
      paneId,
      shellPid: process.pid,
      foregroundProcessGroupId: -1,
      tty: "",
      foregroundProcesses: [
        { pid: tuiPid, name: "tui", argv: [] },
        { pid: backendPid, name: "backend", argv: [] },
      ],
    }),
    subscribe: async () => () => {},
  };
}

/** A real command runner that counts what it starts. */
function counting(): CommandRunner & { count: number } {
  const run = Object.assign(
    (file: string, args: readonly string[], options?: Parameters<CommandRunner>[2]) => (
      run.count++, runCommand(file, args, options)
    ),
    { count: 0 },
  );
  return run;
}

interface PaneVariant {
  name: string;
  provider: ProofProvider;
  host: PaneHost;
  req: PaneProofRequest;
  forks?: { count: number };
}

/** Whole pane proofs, the variants interleaved run by run so each sees the same load on this shared host. */
async function paneProofs(variants: PaneVariant[]) {
  const runs = variants.map(() => ({
    walls: [] as number[],
    ages: [] as number[],
    forked: [] as number[],
    last: [] as ProofFact[],
  }));
  for (let i = 0; i <= N; i++) {
    for (const [v, variant] of variants.entries()) {
      await new Promise((r) => setTimeout(r, SNAPSHOT_REUSE_MS + 25));
      const run = runs[v]!;
      const before = variant.forks?.count ?? 0;
      const t = performance.now();
      run.last = await provePane(
        { host: variant.host, provider: variant.provider, clock: systemMonotonicClock },
        variant.req,
      );
      const end = performance.now();
      if (i === 0) continue;
      run.walls.push(end - t);
      run.ages.push(end - Math.min(...run.last.map((p) => p.completedAtMs)));
      run.forked.push((variant.forks?.count ?? 0) - before);
    }
  }
  return variants.map((variant, v) => {
    const { walls, ages, forked, last } = runs[v]!;
    const withinBound = Number((ages.filter((a) => a <= FRESHNESS_LIMIT_MS).length / ages.length).toFixed(2));
    return {
      name: variant.name,
      wallP50: pct(walls, 50),
      wallP99: pct(walls, 99),
      oldestProofAgeP50: pct(ages, 50),
      oldestProofAgeP99: pct(ages, 99),
      withinBound,
      forksPerProof: variant.forks ? pct(forked, 50) : 0,
      outcomes: Object.fromEntries(last.map((p) => [p.kind, p.outcome])),
      n: N,
    };
  });
}

async function main() {
  const dir = scratchDir("proof-sources");
  const { backend, tui, tuple } = await processes(dir);
  const linux = new LinuxProofProvider();
  const forks = counting();
  const darwin = new DarwinProofProvider(systemMonotonicClock, forks, process.getuid!(), process.pid);
  const eachForks = counting();
  // The same provider with no snapshot reuse: every fact forks its own commands (the route before issue 15's work).
  const darwinEach = new DarwinProofProvider(systemMonotonicClock, eachForks, process.getuid!(), process.pid, 0);
  const lb = await idOf(linux, backend.pid);
  const lt = await idOf(linux, tui.pid);
  const db = await idOf(darwin, backend.pid);
  const dt = await idOf(darwin, tui.pid);
  const calls = [
    await time("linux /proc: identify", () => linux.identify(backend.pid)),
    await time("linux /proc: ancestry", () => linux.ancestry(lb)),
    await time("linux /proc: cwd", () => linux.cwd(lb)),
    await time("linux /proc: environment", () => linux.environment(lb)),
    await time("linux /proc: listeners", () => linux.listeners(lb)),
    await time("linux /proc: connectionPeer", () => linux.connectionPeer(tuple)),
    // Uncached (reuse 0): what each read costs when it forks.
    await time("macOS route on Linux ps: identify (ps -ax table)", () => darwinEach.identify(backend.pid)),
    await time("macOS route on Linux ps: commandLine (one ps -o lstart,args -p)", () => darwinEach.commandLine(db)),
    await time("macOS route on Linux lsof: cwd (lsof -d cwd, then ps table)", () => darwinEach.cwd(db)),
    await time("macOS route on Linux lsof: listeners (lsof -iTCP -U socket table, then ps table)", () =>
      darwinEach.listeners(db),
    ),
    await time("macOS route on Linux lsof: connectionPeer (lsof -iTCP -U socket table, then ps table)", () =>
      darwinEach.connectionPeer(tuple),
    ),
    await time("macOS route: listeners answered from a socket table under 125 ms old", () => darwin.listeners(db)),
    // processes() answers from its own cache for 500 ms (lib/processes.js): spaced out, each call reads afresh.
    await time(
      "systeminformation: processes(), 510 ms apart (uncached)",
      async () => (await new Promise((r) => setTimeout(r, 510)), si.processes()).then(() => undefined),
      8,
    ),
    await time(
      "systeminformation: processes(), back to back (its 500 ms cache answers)",
      () => si.processes(),
      Math.min(N, 10),
    ),
    await time("systeminformation: networkConnections()", () => si.networkConnections(), Math.min(N, 10)),
  ];
  const req = (t: ProcessIdentity, b: ProcessIdentity): PaneProofRequest => ({
    pane: { paneId: "p", terminalId: "t", sessionId: "s" },
    tui: t,
    backend: b,
    order: "backend_first",
    harness: "codex",
    home: "/nonexistent",
    connection: tuple,
  });
  const host = hostFor(tui.pid, backend.pid);
  // Windows: the long-lived host's transport, against a stand-in that answers recorded output.
  const fixtures = join(REPO_ROOT, "test", "fixtures", "proofs", "windows");
  const psHost = new PowerShellHost({
    file: process.execPath,
    args: [join(KIT, "fake-powershell-host.mjs"), fixtures],
  });
  const win = new WindowsProofProvider(psHost.ask, systemMonotonicClock, 7777);
  const micros = (iso: string) => Date.parse(iso) * 1000 + Number(/\.\d{3}(\d{3})/.exec(iso)![1]);
  calls.push(
    await time("windows host transport (stand-in): detail round trip", () => psHost.ask({ op: "detail", pid: 7200 })),
  );
  calls.push(await time("windows host transport (stand-in): processes table + parse", () => win.identify(7200)));
  const winHost: PaneHost = {
    ...hostFor(7200, 7300),
    processInfo: async (paneId) => ({
      paneId,
      shellPid: 7100,
      foregroundProcessGroupId: 0,
      tty: "",
      foregroundProcesses: [
        { pid: 7300, name: "codex.exe", argv: [] },
        { pid: 7200, name: "codex.exe", argv: [] },
      ],
    }),
  };
  const panes = await paneProofs([
    { name: "pane proof, linux /proc", provider: linux, host, req: req(lt, lb) },
    {
      name: `pane proof, macOS route on Linux ps/lsof, shared snapshots (reuse ${SNAPSHOT_REUSE_MS} ms; home: race, ps -E is BSD-only)`,
      provider: darwin,
      host,
      req: req(dt, db),
      forks,
    },
    {
      name: "pane proof, macOS route on Linux ps/lsof, every fact its own fork (reuse 0; home: race)",
      provider: darwinEach,
      host,
      req: req(dt, db),
      forks: eachForks,
    },
    {
      name: "pane proof, windows provider over the host transport (stand-in, recorded answers)",
      provider: win,
      host: winHost,
      req: {
        ...req(
          { pid: 7200, startTime: micros("2026-11-30T09:51:12.400456Z") },
          { pid: 7300, startTime: micros("2026-11-30T09:51:12.100456Z") },
        ),
        home: "C:\\Users\\Jürgen Ö\\.codex-seat",
        connection: { localAddress: "127.0.0.1", localPort: 61234, remoteAddress: "127.0.0.1", remotePort: 4500 },
      },
    },
  ]);
  psHost.close();
  const repeat = await measureRepeatReader(N);
  const repeatReader = {
    command: repeat.command,
    samples: repeat.samples,
    scanP50: pct(repeat.scanMs, 50),
    scanP99: pct(repeat.scanMs, 99),
    snapshotAgeP50: pct(repeat.snapshotAgeMs, 50),
    snapshotAgeP99: pct(repeat.snapshotAgeMs, 99),
    snapshotWithinBound: Number(
      (repeat.snapshotAgeMs.filter((a) => a <= FRESHNESS_LIMIT_MS).length / repeat.samples).toFixed(2),
    ),
    waitForNextScanP50: pct(repeat.waitForNextScanMs, 50),
    waitForNextScanP99: pct(repeat.waitForNextScanMs, 99),
  };
  const shellHost = (await measureShellHost(N)).map((f) => ({
    command: f.command,
    viaShellP50: pct(f.viaShellMs, 50),
    viaShellP99: pct(f.viaShellMs, 99),
    viaSpawnP50: pct(f.viaSpawnMs, 50),
    viaSpawnP99: pct(f.viaSpawnMs, 99),
  }));

  const result = {
    at: new Date().toISOString(),
    host: { cpus: cpus().length, loadavg: loadavg().map((x) => Number(x.toFixed(2))), node: process.version },
    n: N,
    calls,
    panes,
    repeatReader,
    shellHost,
  };
  mkdirSync(join(REPO_ROOT, "bench", "results"), { recursive: true });
  writeFileSync(join(REPO_ROOT, "bench", "results", "proof-sources.json"), `${JSON.stringify(result, null, 2)}\n`);
  for (const c of calls)
    console.log(`${c.name.padEnd(72)} p50 ${String(c.p50).padStart(8)} ms  p99 ${String(c.p99).padStart(8)} ms`);
  for (const p of panes)
    console.log(
      `${p.name}\n  wall p50 ${p.wallP50} / p99 ${p.wallP99} ms; oldest proof age p50 ${p.oldestProofAgeP50} / p99 ${p.oldestProofAgeP99} ms; within ${FRESHNESS_LIMIT_MS} ms ${p.withinBound}; forks ${p.forksPerProof}; ${JSON.stringify(p.outcomes)}`,
    );
  console.log(
    `long-lived reader ${repeatReader.command}\n  scan p50 ${repeatReader.scanP50} / p99 ${repeatReader.scanP99} ms; snapshot age p50 ${repeatReader.snapshotAgeP50} / p99 ${repeatReader.snapshotAgeP99} ms (within ${FRESHNESS_LIMIT_MS} ms ${repeatReader.snapshotWithinBound}); wait for the next scan p50 ${repeatReader.waitForNextScanP50} / p99 ${repeatReader.waitForNextScanP99} ms`,
  );
  for (const f of shellHost)
    console.log(
      `${f.command}\n  through one long-lived /bin/sh p50 ${f.viaShellP50} / p99 ${f.viaShellP99} ms; spawned by Node p50 ${f.viaSpawnP50} / p99 ${f.viaSpawnP99} ms`,
    );
  sockets.forEach((s) => s.destroy());
  children.forEach((c) => c.kill("SIGKILL"));
  removeScratch(dir);
}

await main();
