/**
 * The proofs section: on real tmux (private socket) with a real backend listening on
 * loopback and a real TUI in the pane's foreground, times each proof-provider call, the
 * full pane proof, and the proof age at the write (the freshness gate's figure, controller
 * authority included) over many iterations. Returns a plain object; bench/run.ts owns the
 * results file. Self-contained on purpose: it imports only node-agent code.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { connect, type Socket } from "node:net";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LinuxProofProvider } from "../../node-agent/proofs/linux.js";
import { provePane, type PaneProofRequest } from "../../node-agent/proofs/pane-proof.js";
import { judgeFreshness, passGate, sleep, FRESHNESS_LIMIT_MS } from "../../node-agent/proofs/freshness.js";
import { systemMonotonicClock } from "../../node-agent/proofs/proof.js";
import type { PaneHost, PaneInfo, PaneProcessInfo } from "../../node-agent/panes/pane-host.js";
import type { ProcessIdentity } from "../../node-agent/proofs/provider.js";

const execFileAsync = promisify(execFile);

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
  /** The pane host's part (tmux list-panes + display-message + a /proc scan), inside the pane proof. */
  pane_host_ms: Summary;
  /** The full pane proof, pane host included, read through the gate. */
  pane_proof_ms: Summary;
  proof_age_at_write_ms: Summary;
  /** The same, without the controller authority: the oldest local proof at the write. */
  local_proof_age_at_write_ms: Summary;
  refused: Record<string, number>;
  goal: { proof_age_at_write_p99_ms: number; met: boolean };
}

export const DEFAULT_PROOFS_CONFIG: ProofsConfig = { n: 1_000, warmup: 50, authorityAgeMs: 1 };

function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] ?? Number.NaN;
  const r = (x: number) => Math.round(x * 100) / 100;
  return { p50_ms: r(at(50)), p99_ms: r(at(99)), mean_ms: r(samples.reduce((a, b) => a + b, 0) / (samples.length || 1)), max_ms: r(sorted.at(-1) ?? Number.NaN), n: samples.length };
}

/** A minimal tmux pane host: panes from tmux, the foreground group from /proc (as a pane host on Linux reads it). */
class BenchTmuxHost implements PaneHost {
  readonly kind = "tmux" as const;
  readonly socket = `clankie-bench-${randomUUID().slice(0, 8)}`;
  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8" }).trim();
  }
  /** The pane host's own calls are asynchronous, as Herdr's socket and the product's tmux host are. */
  private async tmuxAsync(...args: string[]): Promise<string> {
    const { stdout } = await execFileAsync("tmux", ["-L", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
    return stdout.trim();
  }
  async listPanes(): Promise<PaneInfo[]> {
    return (await this.tmuxAsync("list-panes", "-a", "-F", "#{pane_id}\t#{window_id}\t#{session_name}")).split("\n").filter(Boolean).map((l) => {
      const [paneId, terminalId, sessionId] = l.split("\t") as [string, string, string];
      return { paneId, terminalId, sessionId, title: "", cwd: "", agentStatus: "unknown" as const };
    });
  }
  async processInfo(paneId: string): Promise<PaneProcessInfo> {
    const [pid, tty] = (await this.tmuxAsync("display-message", "-p", "-t", paneId, "#{pane_pid}\t#{pane_tty}")).split("\t") as [string, string];
    const stat = (p: string) => {
      const t = readFileSync(`/proc/${p}/stat`, "utf8");
      return t.slice(t.lastIndexOf(")") + 2).split(" ");
    };
    const tpgid = Number(stat(pid)[5]);
    const members = readdirSync("/proc").filter((d) => {
      if (!/^\d+$/.test(d)) return false;
      try {
        return Number(stat(d)[2]) === tpgid;
      } catch {
        return false;
      }
    });
    return { paneId, shellPid: Number(pid), foregroundProcessGroupId: tpgid, tty, foregroundProcesses: members.map((d) => ({ pid: Number(d), name: "", argv: [] })) };
  }
  async subscribe(): Promise<() => void> {
    return () => {};
  }
}

const BACKEND_JS = `const n=require("net"),f=require("fs");const h=[];const s=n.createServer(c=>h.push(c)).listen(0,"127.0.0.1",()=>{f.writeFileSync(process.argv[1]+".t",JSON.stringify({pid:process.pid,port:s.address().port}));f.renameSync(process.argv[1]+".t",process.argv[1])})`;
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

export async function runProofs(cfg: ProofsConfig = DEFAULT_PROOFS_CONFIG, log: (line: string) => void = () => {}): Promise<ProofsResult> {
  if (process.platform !== "linux") throw new Error(`the proofs section runs on Linux (real /proc and tmux); this is ${process.platform}`);
  const host = new BenchTmuxHost();
  const provider = new LinuxProofProvider(systemMonotonicClock);
  const dir = mkdtempSync(join(tmpdir(), "clankie-bench-proofs-"));
  const home = join(dir, "codex-home");
  let socket: Socket | undefined;
  const launched: number[] = [];
  try {
    const paneId = host.tmux("new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "bench", "-x", "160", "-y", "40", "exec /bin/sh -i");
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const line = `CODEX_HOME=${q(home)} sh -c ${q(`node -e ${q(BACKEND_JS)} ${join(dir, "b.json")} & node -e ${q(TUI_JS)} ${join(dir, "t.json")}; wait`)}`;
    host.tmux("send-keys", "-t", paneId, "-l", line);
    host.tmux("send-keys", "-t", paneId, "Enter");
    const b = await report<{ pid: number; port: number }>(join(dir, "b.json"));
    const t = await report<{ pid: number }>(join(dir, "t.json"));
    const backend = await identity(provider, b.pid);
    const tui = await identity(provider, t.pid);
    launched.push(b.pid, t.pid);
    socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(b.port, "127.0.0.1", () => resolve(s)).once("error", reject);
    });
    const pane = (await host.listPanes()).find((p) => p.paneId === paneId)!;
    const req: PaneProofRequest = {
      pane: { paneId, terminalId: pane.terminalId, sessionId: pane.sessionId },
      tui,
      backend,
      order: "backend_first",
      harness: "codex",
      home,
      connection: { localAddress: socket.localAddress!, localPort: socket.localPort!, remoteAddress: socket.remoteAddress!, remotePort: socket.remotePort! },
    };
    const shell = await identity(provider, Number(host.tmux("display-message", "-p", "-t", paneId, "#{pane_pid}")));
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
    if (failed.length) throw new Error(`the bench pane does not prove: ${failed.map((p) => `${p.kind}: ${p.detail}`).join("; ")}`);

    const providerMs = Object.fromEntries(Object.keys(calls).map((k) => [k, [] as number[]])) as Record<keyof typeof calls, number[]>;
    for (const [name, call] of Object.entries(calls) as [keyof typeof calls, () => Promise<{ known: boolean }>][]) {
      for (let i = 0; i < cfg.warmup + cfg.n; i++) {
        const t0 = performance.now();
        const f = await call();
        const ms = performance.now() - t0;
        if (!f.known) throw new Error(`${name} answered unknown during the bench`);
        if (i >= cfg.warmup) providerMs[name].push(ms);
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
    const refused: Record<string, number> = {};
    for (let i = 0; i < cfg.warmup + cfg.n; i++) {
      // One simulated Deliver: the request arrives, the gate reads the pane proof, the write would follow.
      const arrivedAtMs = performance.now();
      const gate = await passGate({
        clock: systemMonotonicClock,
        wait: sleep,
        authority: { ageMs: cfg.authorityAgeMs, arrivedAtMs },
        readers: [{ name: "pane", read: () => provePane({ host, provider, clock: systemMonotonicClock }, req) }],
      });
      const atWrite = judgeFreshness(systemMonotonicClock, gate.proofs, undefined);
      const local = judgeFreshness(systemMonotonicClock, gate.proofs.filter((p) => p.kind !== "controller_authority"), undefined);
      const fullMs = performance.now() - arrivedAtMs;
      if (i < cfg.warmup) continue;
      paneMs.push(fullMs);
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
      processes: execFileSync("ps", ["-e", "-o", "pid="], { encoding: "utf8" }).split("\n").filter((l) => l.trim()).length,
      n: cfg.n,
      provider_ms: Object.fromEntries(Object.entries(providerMs).map(([k, v]) => [k, summarize(v)])) as ProofsResult["provider_ms"],
      pane_host_ms: summarize(hostMs),
      pane_proof_ms: summarize(paneMs),
      proof_age_at_write_ms: age,
      local_proof_age_at_write_ms: summarize(localAges),
      refused,
      goal: { proof_age_at_write_p99_ms: GOAL_P99_MS, met: age.n === cfg.n && age.p99_ms <= GOAL_P99_MS && age.p99_ms <= FRESHNESS_LIMIT_MS },
    };
  } finally {
    socket?.destroy();
    for (const pid of launched) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone with the pane.
      }
    }
    try {
      host.tmux("kill-server");
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
