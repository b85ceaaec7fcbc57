/**
 * The proofs section: on real tmux (private socket) with a real backend listening on
 * loopback and a real TUI in the pane's foreground, times each proof-provider call, the
 * full pane proof, and the proof age at the write (the freshness gate's figure, controller
 * authority included) over many iterations. Returns a plain object; bench/run.ts owns the
 * results file. Self-contained on purpose: it imports only node-agent code.
 */
import { execFileSync, spawn } from "node:child_process";
import { connect, type AddressInfo, type Socket } from "node:net";
import { createServer as createHttp2Server } from "node:http2";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LinuxProofProvider } from "../../node-agent/proofs/linux.js";
import { provePane, type PaneProofRequest } from "../../node-agent/proofs/pane-proof.js";
import {
  judgeFreshness,
  passGate,
  sleep,
  FRESHNESS_LIMIT_MS,
  UNMEASURED_TRANSIT_BOUND_MS,
} from "../../node-agent/proofs/freshness.js";
import { LinkRoundTrips } from "../../node-agent/service/link-round-trips.js";
import { systemMonotonicClock } from "../../node-agent/proofs/proof.js";
import { TmuxPaneHost } from "../../node-agent/panes/tmux.js";
import type { ProcessIdentity } from "../../node-agent/proofs/provider.js";

export interface ProofsConfig {
  /** Iterations per measurement (≥ 1,000 for the published figures). */
  n: number;
  warmup: number;
  /** The controller's stated authority age in each simulated request (its own checks take well under 1 ms; it sends the ceiling). */
  authorityAgeMs: number;
}

export interface Summary {
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  max_ms: number;
  n: number;
}

export interface ProofsResult {
  platform: string;
  processes: number;
  n: number;
  provider_ms: Record<"identify" | "ancestry" | "foreground_group" | "home" | "listeners" | "connection_peer", Summary>;
  /** The pane host's part (two `list-panes` over tmux's control mode + a /proc scan), inside the pane proof. */
  pane_host_ms: Summary;
  /** The full pane proof, pane host included, read through the gate. */
  pane_proof_ms: Summary;
  proof_age_at_write_ms: Summary;
  /** The same, without the controller authority: the oldest local proof at the write. */
  local_proof_age_at_write_ms: Summary;
  /** The transit bound added to the authority's age: the loopback link's worst recent HTTP/2 PING round trip. */
  authority_transit_bound_ms: Summary;
  refused: Record<string, number>;
  goal: { proof_age_at_write_p99_ms: number; met: boolean };
}

export const DEFAULT_PROOFS_CONFIG: ProofsConfig = { n: 1_000, warmup: 50, authorityAgeMs: 1 };

function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] ?? Number.NaN;
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    p50_ms: r(at(50)),
    p99_ms: r(at(99)),
    mean_ms: r(samples.reduce((a, b) => a + b, 0) / (samples.length || 1)),
    max_ms: r(sorted.at(-1) ?? Number.NaN),
    n: samples.length,
  };
}

/** Setup only (a session, the launch line): the measured queries go through the product's TmuxPaneHost. */
class BenchTmux {
  readonly socket = `clankie-bench-${randomUUID().slice(0, 8)}`;
  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8" }).trim();
  }
}

/**
 * A real HTTP/2 link on loopback from another process (the controller's side), pinged as the
 * agent pings its controller's sessions: the transit bound each simulated request carries is
 * the one the agent would add here, busy event loop included.
 */
async function loopbackLink(): Promise<{ roundTrips: LinkRoundTrips; close: () => void }> {
  const roundTrips = new LinkRoundTrips();
  const server = createHttp2Server();
  server.on("connection", (s: Socket) => s.setNoDelay(true));
  roundTrips.watch(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const controller = spawn(
    process.execPath,
    [
      "-e",
      `const c=require("node:http2").connect(${JSON.stringify(url)});c.on("error",()=>process.exit(0));c.on("close",()=>process.exit(0))`,
    ],
    { stdio: "ignore" },
  );
  for (let i = 0; i < 200 && roundTrips.transitBoundMs() === UNMEASURED_TRANSIT_BOUND_MS; i++) await sleep(10);
  return {
    roundTrips,
    close: () => {
      controller.kill();
      server.close();
    },
  };
}

const BACKEND_JS = `const n=require("net"),f=require("fs");const h=[];const s=n.createServer(c=>{h.push(c);c.write("\\n")}).listen(0,"127.0.0.1",()=>{f.writeFileSync(process.argv[1]+".t",JSON.stringify({pid:process.pid,port:s.address().port}));f.renameSync(process.argv[1]+".t",process.argv[1])})`;
const TUI_JS = `const f=require("fs");f.writeFileSync(process.argv[1]+".t",JSON.stringify({pid:process.pid}));f.renameSync(process.argv[1]+".t",process.argv[1]);setInterval(()=>{},1<<30)`;

async function report<T>(path: string): Promise<T> {
  for (let i = 0; i < 1_000 && !existsSync(path); i++) await sleep(20);
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

async function identity(provider: LinuxProofProvider, pid: number): Promise<ProcessIdentity> {
  const f = await provider.identify(pid);
  if (!f.known) throw new Error(`pid ${pid}: ${f.detail}`);
  return { pid, startTime: f.value.startTime };
}

export async function runProofs(
  cfg: ProofsConfig = DEFAULT_PROOFS_CONFIG,
  log: (line: string) => void = () => {},
): Promise<ProofsResult> {
  if (process.platform !== "linux")
    throw new Error(`the proofs section runs on Linux (real /proc and tmux); this is ${process.platform}`);
  const setup = new BenchTmux();
  const link = await loopbackLink();
  const host = new TmuxPaneHost({ socketName: setup.socket });
  const provider = new LinuxProofProvider(systemMonotonicClock);
  const dir = mkdtempSync(join(tmpdir(), "clankie-bench-proofs-"));
  const home = join(dir, "codex-home");
  let socket: Socket | undefined;
  const launched: number[] = [];
  try {
    const paneId = setup.tmux(
      "new-session",
      "-d",
      "-P",
      "-F",
      "#{pane_id}",
      "-s",
      "bench",
      "-x",
      "160",
      "-y",
      "40",
      "exec /bin/sh -i",
    );
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const line = `CODEX_HOME=${q(home)} sh -c ${q(`node -e ${q(BACKEND_JS)} ${join(dir, "b.json")} & node -e ${q(TUI_JS)} ${join(dir, "t.json")}; wait`)}`;
    setup.tmux("send-keys", "-t", paneId, "-l", line);
    setup.tmux("send-keys", "-t", paneId, "Enter");
    const b = await report<{ pid: number; port: number }>(join(dir, "b.json"));
    const t = await report<{ pid: number }>(join(dir, "t.json"));
    const backend = await identity(provider, b.pid);
    const tui = await identity(provider, t.pid);
    launched.push(b.pid, t.pid);
    socket = await new Promise<Socket>((resolve, reject) => {
      // Resolved on the backend's greeting: until accept() the server end belongs to no process.
      const s = connect(b.port, "127.0.0.1").once("error", reject);
      s.once("data", () => resolve(s));
    });
    const pane = (await host.listPanes()).find((p) => p.paneId === paneId)!;
    const req: PaneProofRequest = {
      pane: { paneId, terminalId: pane.terminalId, sessionId: pane.sessionId },
      tui,
      backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection: {
        localAddress: socket.localAddress!,
        localPort: socket.localPort!,
        remoteAddress: socket.remoteAddress!,
        remotePort: socket.remotePort!,
      },
    };
    const shell = await identity(provider, Number(setup.tmux("display-message", "-p", "-t", paneId, "#{pane_pid}")));
    const calls = {
      identify: () => provider.identify(backend.pid),
      ancestry: () => provider.ancestry(backend),
      foreground_group: () => provider.foregroundGroup(shell),
      home: () => provider.home(backend, "codex"),
      listeners: () => provider.listeners(backend),
      connection_peer: () => provider.connectionPeer(req.connection),
    };
    const first = await provePane({ host, provider, clock: systemMonotonicClock }, req);
    const failed = first.filter((p) => p.outcome !== "proven");
    if (failed.length)
      throw new Error(`the bench pane does not prove: ${failed.map((p) => `${p.kind}: ${p.detail}`).join("; ")}`);

    const providerMs = Object.fromEntries(Object.keys(calls).map((k) => [k, [] as number[]])) as Record<
      keyof typeof calls,
      number[]
    >;
    for (const [name, call] of Object.entries(calls) as [keyof typeof calls, () => Promise<{ known: boolean }>][]) {
      for (let i = 0; i < cfg.warmup + cfg.n; i++) {
        const t0 = performance.now();
        const f = await call();
        const ms = performance.now() - t0;
        if (!f.known) throw new Error(`${name} answered unknown during the bench`);
        if (i >= cfg.warmup) providerMs[name].push(ms);
        // Let I/O run between calls, as an agent's loop does between requests (the link's PINGs among them).
        await new Promise((r) => setImmediate(r));
      }
      log(`proofs: ${name} ×${cfg.n}`);
    }

    const hostMs: number[] = [];
    for (let i = 0; i < cfg.warmup + cfg.n; i++) {
      const t0 = performance.now();
      await host.listPanes();
      await host.processInfo(paneId);
      if (i >= cfg.warmup) hostMs.push(performance.now() - t0);
    }
    log(`proofs: pane host ×${cfg.n}`);

    const paneMs: number[] = [];
    const ages: number[] = [];
    const localAges: number[] = [];
    const transitBounds: number[] = [];
    const refused: Record<string, number> = {};
    for (let i = 0; i < cfg.warmup + cfg.n; i++) {
      // One simulated Deliver: the request arrives, the gate reads the pane proof, the write would follow.
      const arrivedAtMs = performance.now();
      const transitBoundMs = link.roundTrips.transitBoundMs();
      const gate = await passGate({
        clock: systemMonotonicClock,
        wait: sleep,
        authority: { ageMs: cfg.authorityAgeMs, arrivedAtMs, transitBoundMs },
        readers: [{ name: "pane", read: () => provePane({ host, provider, clock: systemMonotonicClock }, req) }],
      });
      const atWrite = judgeFreshness(systemMonotonicClock, gate.proofs, undefined);
      const local = judgeFreshness(
        systemMonotonicClock,
        gate.proofs.filter((p) => p.kind !== "controller_authority"),
        undefined,
      );
      const fullMs = performance.now() - arrivedAtMs;
      if (i < cfg.warmup) continue;
      paneMs.push(fullMs);
      transitBounds.push(transitBoundMs);
      if (gate.pass) {
        ages.push(atWrite.oldestAgeMs);
        localAges.push(local.oldestAgeMs);
      } else refused[gate.reason] = (refused[gate.reason] ?? 0) + 1;
    }
    log(`proofs: pane proof through the gate ×${cfg.n}`);
    const age = summarize(ages);
    const GOAL_P99_MS = 25;
    return {
      platform: process.platform,
      processes: execFileSync("ps", ["-e", "-o", "pid="], { encoding: "utf8" })
        .split("\n")
        .filter((l) => l.trim()).length,
      n: cfg.n,
      provider_ms: Object.fromEntries(
        Object.entries(providerMs).map(([k, v]) => [k, summarize(v)]),
      ) as ProofsResult["provider_ms"],
      pane_host_ms: summarize(hostMs),
      pane_proof_ms: summarize(paneMs),
      proof_age_at_write_ms: age,
      local_proof_age_at_write_ms: summarize(localAges),
      authority_transit_bound_ms: summarize(transitBounds),
      refused,
      goal: {
        proof_age_at_write_p99_ms: GOAL_P99_MS,
        met: age.n === cfg.n && age.p99_ms <= GOAL_P99_MS && age.p99_ms <= FRESHNESS_LIMIT_MS,
      },
    };
  } finally {
    link.close();
    host.close();
    socket?.destroy();
    for (const pid of launched) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone with the pane.
      }
    }
    try {
      setup.tmux("kill-server");
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
