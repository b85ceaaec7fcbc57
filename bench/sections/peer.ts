/**
 * Section 1 and 2: the peer path. The same messages go, alternately, through the node-agent
 * path (MCP message_seat to the controller process: receipt committed, one Deliver call,
 * proofs + gate on the agent process, mailbox write, settle), the agent's half alone (Deliver
 * straight to the agent), and the legacy SSH path (three proof reads and a write, one exec
 * each, against a real sshd), first on plain loopback, then with 50 ms RTT added by a delay
 * proxy on both paths. Alternating iterations means machine noise hits both alike.
 * At 50 ms RTT an SSH delivery is ~475 ms mostly spent waiting, so half the agent calls there
 * come after that idle spell and half right after another agent call; both halves are reported,
 * and the agent path on loopback is also run with the same idle spell before each call, so the
 * run shows what the idle spell alone costs (issue 17: what bounds the 50 ms RTT figure).
 */
import { createServer, connect, type AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import type { BenchFleet, DeliveryResult } from "../fleet.js";
import { startDelayProxy } from "../delay-proxy.js";
import { runTlsHandshake } from "./tls-handshake.js";
import { connectLegacy, type LegacySsh } from "../ssh-legacy.js";
import type { RunningSshd } from "../sshd.js";
import { percentile, round, summarize, type LatencySummary } from "../stats.js";

export interface PeerConfig {
  n: number;
  nRtt: number;
  warmup: number;
  oneWayMs: number;
  /** The idle spell before each call of the loopback after-idle run: about the SSH path's p50 at 50 ms RTT. */
  idleGapMs: number;
}

interface PathRun {
  agent: number[];
  agentRpc: number[];
  ssh: number[];
  /** The agent samples again, split by what ran just before: an SSH delivery, or another agent call. */
  agentAfterSsh: number[];
  agentAfterAgent: number[];
  agentFailures: Record<string, number>;
  sshFailures: number;
  proofAges: number[];
  refused: number;
  sshProofAges: number[];
}

// Unique text per call: identical content to a seat with an unresolved receipt is fenced (ADR 0207).
let sent = 0;
const message = () =>
  `Please run the tests and report. (bench message ${++sent}, about one line like a real lead writes)`;

function newRun(): PathRun {
  return {
    agent: [],
    agentRpc: [],
    ssh: [],
    agentAfterSsh: [],
    agentAfterAgent: [],
    agentFailures: {},
    sshFailures: 0,
    proofAges: [],
    refused: 0,
    sshProofAges: [],
  };
}

function recordAgent(run: PathRun, r: DeliveryResult, afterSsh: boolean): void {
  if (r.outcome === "delivered") {
    run.agent.push(r.ms);
    (afterSsh ? run.agentAfterSsh : run.agentAfterAgent).push(r.ms);
    if (r.proofAgeMs !== undefined) run.proofAges.push(r.proofAgeMs);
  } else {
    const key = `${r.outcome}:${r.reason ?? ""}`;
    run.agentFailures[key] = (run.agentFailures[key] ?? 0) + 1;
  }
  if (r.reason === "proof_stale") run.refused++;
}

async function alternate(
  n: number,
  run: PathRun | undefined,
  fleet: BenchFleet,
  seat: string,
  ssh: LegacySsh | undefined,
): Promise<void> {
  let last = "";
  for (let i = 0; i < n; i++) {
    // Swap who goes first each iteration so neither path always runs on a warmer cache.
    const order = i % 2 === 0 ? ["agent", "rpc", "ssh"] : ["ssh", "rpc", "agent"];
    for (const which of order) {
      if (which === "agent") {
        const r = await fleet.deliver(seat, message());
        if (run) recordAgent(run, r, last === "ssh");
      } else if (which === "rpc") {
        if (!fleet.deliverDirect) continue;
        const r = await fleet.deliverDirect!(seat.split("/")[1]!, message());
        if (run && r.ok) run.agentRpc.push(r.ms);
      } else if (ssh) {
        const t0 = performance.now();
        const r = await ssh.deliver(randomUUID(), message());
        const ms = performance.now() - t0;
        if (!run) continue;
        if (r.ok) {
          run.ssh.push(ms);
          run.sshProofAges.push(r.proofAgeMs);
        } else run.sshFailures++;
      } else continue;
      last = which;
    }
  }
}

/** Agent deliveries on loopback, each after `gapMs` of idle: the idle spell alone, with no round trip added. */
async function afterIdle(n: number, gapMs: number, fleet: BenchFleet, seat: string): Promise<PathRun> {
  const run = newRun();
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, gapMs));
    recordAgent(run, await fleet.deliver(seat, message()), false);
  }
  return run;
}

/** The round trip the proxy really adds: a one-byte ping-pong through it to an echo server. */
async function measuredRtt(oneWayMs: number, samples: number): Promise<number> {
  const echo = createServer((s) => {
    s.setNoDelay(true);
    s.on("data", (d) => s.write(d));
  });
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  const proxy = await startDelayProxy("127.0.0.1", (echo.address() as AddressInfo).port, oneWayMs);
  const sock = connect({ host: "127.0.0.1", port: proxy.port });
  sock.setNoDelay(true);
  await new Promise<void>((r) => sock.once("connect", () => r()));
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await new Promise<void>((r) => {
      sock.once("data", () => r());
      sock.write("x");
    });
    times.push(performance.now() - t0);
  }
  sock.destroy();
  await proxy.close();
  await new Promise<void>((r) => echo.close(() => r()));
  return round(percentile(times, 50));
}

function pathFigures(run: PathRun, sshSkipped: string | undefined) {
  const agent = summarize(run.agent);
  const ssh: LatencySummary | string = sshSkipped ?? summarize(run.ssh);
  return {
    agent,
    ssh,
    agent_after_ssh: run.agentAfterSsh.length ? summarize(run.agentAfterSsh) : "no samples",
    agent_after_agent: run.agentAfterAgent.length ? summarize(run.agentAfterAgent) : "no samples",
    ratio_p50: typeof ssh === "string" ? null : round(ssh.p50_ms / agent.p50_ms),
    ratio_p99: typeof ssh === "string" ? null : round(ssh.p99_ms / agent.p99_ms),
    // The agent's half alone (Deliver straight to the agent, no receipt journal): transport vs transport.
    // Gone with the agent's port (reverse links, ADR 0021): the agent's half is no longer callable alone.
    agent_rpc_only: run.agentRpc.length ? summarize(run.agentRpc) : "skipped: agents listen on no port (reverse links)",
    ratio_p50_rpc_only:
      typeof ssh === "string" || !run.agentRpc.length ? null : round(ssh.p50_ms / summarize(run.agentRpc).p50_ms),
    agent_failures: run.agentFailures,
    ssh_failures: run.sshFailures,
  };
}

export async function runPeer(cfg: PeerConfig, fleet: BenchFleet, sshd: RunningSshd | string) {
  if (!fleet.routeAgentVia)
    throw new Error(
      "skipped: the peer section needs PostgreSQL (the delay proxy is set through the controller_instances row)",
    );
  const route = fleet.routeAgentVia;
  const seat = fleet.seatIds[0]!;
  const sshSkipped = typeof sshd === "string" ? sshd : undefined;
  const target =
    typeof sshd === "string"
      ? undefined
      : {
          host: "127.0.0.1",
          username: sshd.username,
          privateKey: sshd.privateKey,
          inbox: sshd.inbox,
          subjectPid: sshd.pid,
        };

  const direct = newRun();
  const ssh0 = target ? await connectLegacy({ ...target, port: (sshd as RunningSshd).port }) : undefined;
  await alternate(cfg.warmup, undefined, fleet, seat, ssh0);
  await alternate(cfg.n, direct, fleet, seat, ssh0);
  ssh0?.close();
  const idle = await afterIdle(cfg.nRtt, cfg.idleGapMs, fleet, seat);

  const agentUrl = new URL(fleet.agentEndpoint);
  const agentProxy = await startDelayProxy(agentUrl.hostname, Number(agentUrl.port), cfg.oneWayMs);
  const sshProxy = target ? await startDelayProxy("127.0.0.1", (sshd as RunningSshd).port, cfg.oneWayMs) : undefined;
  const delayed = newRun();
  let rtt = Number.NaN;
  try {
    await route(agentProxy.url, () => agentProxy.accepted());
    const ssh50 = target && sshProxy ? await connectLegacy({ ...target, port: sshProxy.port }) : undefined;
    await alternate(Math.max(2, Math.ceil(cfg.warmup / 5)), undefined, fleet, seat, ssh50);
    await alternate(cfg.nRtt, delayed, fleet, seat, ssh50);
    ssh50?.close();
    rtt = await measuredRtt(cfg.oneWayMs, 20);
  } finally {
    await route(fleet.agentEndpoint);
    await agentProxy.close();
    await sshProxy?.close();
  }

  const tlsHandshake = await runTlsHandshake(fleet, Math.max(5, cfg.n));
  const loopback = pathFigures(direct, sshSkipped);
  const rtt50 = pathFigures(delayed, sshSkipped);
  const sshAges = (run: PathRun) =>
    run.sshProofAges.length
      ? { ...summarize(run.sshProofAges), over_250ms: run.sshProofAges.filter((a) => a > 250).length }
      : (sshSkipped ?? "no samples");
  return {
    peer: {
      ...loopback,
      rtt50: {
        ...rtt50,
        added_rtt_ms: cfg.oneWayMs * 2,
        measured_rtt_p50_ms: rtt,
        agent_p50_minus_rtt_ms: round(rtt50.agent.p50_ms - rtt),
      },
      after_idle: {
        idle_ms: cfg.idleGapMs,
        agent: summarize(idle.agent),
        agent_failures: idle.agentFailures,
        method:
          "agent deliveries on loopback (no delay proxy), one at a time, each after this long with nothing running: the idle spell half the 50 ms RTT calls come after",
      },
      ssh_server: typeof sshd === "string" ? sshd : sshd.version,
      tls_handshake: tlsHandshake,
      method:
        "alternating iterations on one warm connection per path; agent path = MCP message_seat from this process → `clankie controller` process (admission statement, Deliver, settle statement) → `clankie agent` process; SSH path = 3 proof execs + 1 write exec on one ssh2 connection to OpenSSH sshd",
    },
    proof_age: {
      ...summarize(direct.proofAges),
      refused: direct.refused + delayed.refused,
      rtt50: summarize(delayed.proofAges),
      legacy_ssh: { loopback: sshAges(direct), rtt50: sshAges(delayed) },
    },
  };
}
