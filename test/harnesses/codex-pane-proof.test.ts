/**
 * The kernel pane proof on a real Codex seat over TCP: a private tmux pane runs a dedicated
 * `codex app-server --listen ws://127.0.0.1:PORT` and, after it, a TUI joined to it with
 * `--remote`. The agent's Codex adapter, given the Linux proof provider, discovers the seat
 * and every delivery carries the pane proofs (pane-proof.ts), all proven. A decoy seat whose
 * recorded backend is another process of the same pane, same home, started before the TUI,
 * but not the one listening, is refused by the kernel proofs with nothing written; so is the
 * seat once its listener is replaced by another app-server outside the pane.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { silentLogger } from "../../shared/logger.js";
import { deliver, type DeliverCommand } from "../../node-agent/deliver/deliver.js";
import { AdapterRegistry } from "../../node-agent/harnesses/registry.js";
import { CodexAdapter, codexControlOf } from "../../node-agent/harnesses/codex/adapter.js";
import { TmuxPaneHost } from "../../node-agent/panes/tmux.js";
import { readStat } from "../../node-agent/proofs/linux-read.js";

const procStat = (pid: number) => {
  const s = readStat(pid);
  return "reason" in s ? undefined : { pid: s.pid, ppid: s.ppid, startTime: s.startTicks };
};
import { SeatBook } from "../../node-agent/seats/seat-book.js";
import { startSeatDiscovery, type SeatDiscovery } from "../../node-agent/seats/discovery.js";
import { systemMonotonicClock } from "../../node-agent/proofs/proof.js";
import { selectProofProvider } from "../../node-agent/proofs/select.js";
import { PANE_PROOF_KINDS } from "../../node-agent/proofs/pane-proof.js";
import type { SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, tries = 900): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", () => resolve()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe("a Codex seat over ws:// carries the kernel pane proofs", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  const tmuxName = `clankie-cxp-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync(TMUX, ["-L", tmuxName, ...args], { encoding: "utf8" }).trim();
  let host: TmuxPaneHost;
  let adapter: CodexAdapter;
  let seats: SeatBook;
  let discovery: SeatDiscovery;
  const adapters = new AdapterRegistry();
  let pane: string;
  let url: string;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer();
    cx = makeCodexEnv(bin, mock.baseUrl);
    const port = await freePort();
    url = `ws://127.0.0.1:${port}`;
    // One pane: its shell starts the dedicated app-server, waits for its listener, then the TUI joins it.
    const script = [
      `"${bin}" app-server --listen ${url} &`,
      `for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && break; sleep 0.1; done`,
      `"${bin}" --remote ${url} -C "${cx.workDir}"`,
      "wait",
    ].join("\n");
    const env = Object.entries(cx.env).map(([k, v]) => `${k}=${v}`);
    tmux(
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "proof",
      "-x",
      "200",
      "-y",
      "50",
      "-c",
      cx.workDir,
      "/usr/bin/env",
      ...env,
      "/bin/bash",
      "-c",
      script,
    );
    pane = tmux("display-message", "-p", "-t", "proof:0", "#{pane_id}");
    host = new TmuxPaneHost({ socketName: tmuxName, pollMs: 200, tmuxBin: TMUX });
    adapter = new CodexAdapter({
      clock: systemMonotonicClock,
      paneHost: host,
      proofs: selectProofProvider("linux", systemMonotonicClock),
    });
    adapters.register(adapter);
    mkdirSync(join(cx.root, "seats"));
    seats = new SeatBook(join(cx.root, "seats"));
    discovery = await startSeatDiscovery({ host, adapters, seats, logger: silentLogger, rescanMs: 300 });
  });

  afterAll(async () => {
    discovery?.close();
    adapter?.close();
    try {
      execFileSync(TMUX, ["-L", tmuxName, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
  });

  const cmd = (seat: SeatRecord, text: string): DeliverCommand => ({
    seatName: seat.name,
    deliveryId: crypto.randomUUID(),
    text,
    mode: "auto",
    conversationId: "c1",
    occupantId: seat.occupantId,
    authorityAgeMs: 0,
    arrivedAtMs: systemMonotonicClock.nowMs(),
  });
  const seatReady = () =>
    until(() => {
      const s = seats.all().find((x) => x.pane?.paneId === pane);
      const c = s && codexControlOf(s);
      return c?.threadId && c.backendPid !== undefined ? s : undefined;
    }, "a codex seat in the pane with its thread and its backend");

  it("a delivery to the --remote ws:// seat passes every kernel pane proof and reaches the model", async () => {
    const seat = await seatReady();
    const ctl = codexControlOf(seat)!;
    expect(ctl).toMatchObject({ launch: "remote", endpoint: url, codexHome: cx.codexHome });
    // The recorded backend is the native app-server, not the TUI.
    expect(ctl.backendPid).not.toBe(ctl.tuiPid);
    const v = await deliver({ seats, adapters, clock: systemMonotonicClock }, cmd(seat, "kernel proven hello"));
    expect(v.result).toBe(AgentResult.Started);
    for (const kind of PANE_PROOF_KINDS) {
      expect(
        v.proofs.find((p) => p.kind === kind),
        kind,
      ).toMatchObject({ kind, outcome: "proven" });
    }
    expect(v.proofs.filter((p) => p.kind === "connection_tuple")[0]!.detail).toMatch(
      new RegExp(`-> 127\\.0\\.0\\.1:${url.split(":").pop()} ends in the backend pid ${ctl.backendPid} `),
    );
    await mock.waitFor((q) => q.lastUserText === "kernel proven hello");
  });

  it("a decoy seat whose backend is another process than the one listening is refused by the kernel proofs; nothing is written", async () => {
    const seat = await seatReady();
    const ctl = codexControlOf(seat)!;
    // The decoy: the app-server's own parent (its node launcher): same pane, same home, created
    // before the TUI, but it holds neither the listener nor the agent's connection.
    const parent = procStat(ctl.backendPid!)!.ppid;
    const decoyBackend = procStat(parent)!;
    expect(decoyBackend.pid).not.toBe(ctl.tuiPid);
    const decoy: SeatRecord = {
      ...seat,
      kind: SeatKind.Codex,
      name: "codex-decoy",
      occupantId: `${seat.occupantId}:decoy`,
      control: { ...ctl, backendPid: decoyBackend.pid, backendStartTime: decoyBackend.startTime },
    };
    mkdirSync(join(cx.root, "decoy"));
    const decoySeats = new SeatBook(join(cx.root, "decoy"));
    decoySeats.putDiscovered(decoy);
    const c = cmd(decoy, "decoy must never arrive");
    const v = await deliver({ seats: decoySeats, adapters, clock: systemMonotonicClock }, c);
    expect(v).toMatchObject({ result: AgentResult.NotSent, reason: "proof_refuted" });
    const outcome = (kind: string) => v.proofs.find((p) => p.kind === kind)?.outcome;
    expect([outcome("backend_listener"), outcome("connection_tuple")]).toEqual(["refuted", "refuted"]);
    // The adapter's own proofs held: it is the kernel that refused.
    expect([
      outcome("codex_home"),
      outcome("codex_thread"),
      outcome("private_home"),
      outcome("foreground_ancestry"),
    ]).toEqual(["proven", "proven", "proven", "proven"]);
    // Nothing reached the thread (the real seat's session) nor the model.
    const session = await adapter.readSession(seat, 0);
    expect(session.complete).toBe(true);
    expect(session.entries.some((e) => e.deliveryId === c.deliveryId)).toBe(false);
    expect(mock.countRequestsWith("decoy must never arrive")).toBe(0);
  });

  it("once the listener is replaced (the backend killed, another app-server on the same port outside the pane), the seat is refused; nothing is written", async () => {
    const seat = await seatReady();
    const ctl = codexControlOf(seat)!;
    const port = Number(url.split(":").pop());
    process.kill(ctl.backendPid!, "SIGKILL");
    const listening = () =>
      new Promise<boolean>((resolve) => {
        const s = connect(port, "127.0.0.1", () => (s.destroy(), resolve(true)));
        s.on("error", () => resolve(false));
      });
    await until(async () => ((await listening()) ? undefined : true), "the old listener gone");
    spawn(bin!, ["app-server", "--listen", url], {
      env: cx.env,
      cwd: cx.workDir,
      stdio: "ignore",
      detached: true,
    }).unref();
    await until(async () => ((await listening()) ? true : undefined), "the replacement listening");
    mkdirSync(join(cx.root, "replaced"));
    const book = new SeatBook(join(cx.root, "replaced"));
    book.putDiscovered(seat);
    const v = await deliver(
      { seats: book, adapters, clock: systemMonotonicClock },
      cmd(seat, "replaced must never arrive"),
    );
    expect(v).toMatchObject({ result: AgentResult.NotSent, reason: "proof_refuted" });
    const outcome = (kind: string) => v.proofs.find((p) => p.kind === kind)?.outcome;
    // The recorded backend lifetime is gone, and the agent's new connection ends in another process.
    expect([outcome("process_identity"), outcome("connection_tuple")]).toEqual(["refuted", "refuted"]);
    expect(mock.countRequestsWith("replaced must never arrive")).toBe(0);
  });
});
