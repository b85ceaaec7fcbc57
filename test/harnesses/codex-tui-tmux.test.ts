/**
 * The real Codex TUI in real tmux panes (a private tmux server, `tmux -L`), found by the
 * node agent's seat discovery through the tmux pane host and driven only through the
 * app-server its own CODEX_HOME points at. A `--no-daemon` TUI is a seat with no control:
 * explicit modes are refused before any write. Nothing is ever typed into a pane.
 * Rules 36 and 47: a TUI this agent's hire launched (the hire marker in its environment, the
 * host journal naming its pane) is owned, [steer, queue] + interrupt; one someone else started
 * is unowned, [steer, queue] with no interrupt; explicit Queue is Codex's own queue for both.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { silentLogger } from "../../shared/logger.js";
import { deliver, type DeliverCommand } from "../../node-agent/deliver/deliver.js";
import { AdapterRegistry } from "../../node-agent/harnesses/registry.js";
import { selectProofProvider } from "../../node-agent/proofs/select.js";
import { CodexAdapter, codexControlOf } from "../../node-agent/harnesses/codex/adapter.js";
import { TmuxPaneHost } from "../../node-agent/panes/tmux.js";
import { HostJournal } from "../../node-agent/hire/host-journal.js";
import { HIRE_ENV } from "../../node-agent/hire/pane-opener.js";
import { SeatBook } from "../../node-agent/seats/seat-book.js";
import { startSeatDiscovery, type SeatDiscovery } from "../../node-agent/seats/discovery.js";
import { systemMonotonicClock } from "../../node-agent/proofs/proof.js";
import { toWireSeat } from "../../node-agent/service/wire-seat.js";
import { DeliveryMode as PbDeliveryMode } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import type { SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockResponsesServer, SLOW_MARKER, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, startAppServer, type CodexEnv } from "./kit/codex-env.js";

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

describe("the real Codex TUI in a real tmux pane, discovered as a seat", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  const tmuxName = `clankie-cx-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync(TMUX, ["-L", tmuxName, ...args], { encoding: "utf8" }).trim();
  let host: TmuxPaneHost;
  let adapter: CodexAdapter;
  let seats: SeatBook;
  let discovery: SeatDiscovery;
  const adapters = new AdapterRegistry();
  let daemonPane: string;
  let plainPane: string;
  let noDaemonPane: string;
  let remotePane: string;
  let remoteSock: string;
  let ownedPane: string;
  const ownedHire = crypto.randomUUID();

  /** The pane's command: the TUI with this test's isolated environment (arguments, never a shell line). */
  const codexCmd = (cwd: string, ...flags: string[]) => [
    "/usr/bin/env",
    ...Object.entries(cx.env).map(([k, v]) => `${k}=${v}`),
    bin!,
    "-C",
    cwd,
    ...flags,
  ];

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer();
    cx = makeCodexEnv(bin, mock.baseUrl);
    const otherDir = join(cx.root, "w2");
    const remoteDir = join(cx.root, "w3");
    const ownedDir = join(cx.root, "w4");
    mkdirSync(otherDir);
    mkdirSync(remoteDir);
    mkdirSync(ownedDir);
    const trust = [otherDir, remoteDir, ownedDir].map((d) => `\n[projects."${d}"]\ntrust_level = "trusted"\n`).join("");
    writeFileSync(join(cx.codexHome, "config.toml"), readFileSync(join(cx.codexHome, "config.toml"), "utf8") + trust);
    remoteSock = join(cx.root, "dedicated.sock");
    await startAppServer(bin, cx, remoteSock);
    tmux(
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "fleet",
      "-x",
      "200",
      "-y",
      "50",
      "-c",
      cx.workDir,
      ...codexCmd(cx.workDir),
    );
    daemonPane = tmux("display-message", "-p", "-t", "fleet:0", "#{pane_id}");
    plainPane = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "fleet", "/bin/sleep", "600");
    noDaemonPane = tmux(
      "new-window",
      "-d",
      "-P",
      "-F",
      "#{pane_id}",
      "-t",
      "fleet",
      ...codexCmd(otherDir, "--no-daemon"),
    );
    remotePane = tmux(
      "new-window",
      "-d",
      "-P",
      "-F",
      "#{pane_id}",
      "-t",
      "fleet",
      ...codexCmd(remoteDir, "--remote", `unix://${remoteSock}`),
    );
    // As the hire's pane opener starts it: the hire marker in the TUI's own environment, and the
    // host journal's record of that hire naming this pane (written as hire.ts writes it at launch).
    const journal = new HostJournal(join(cx.root, "agent-state"));
    ownedPane = tmux(
      "new-window",
      "-d",
      "-P",
      "-F",
      "#{pane_id}",
      "-t",
      "fleet",
      "/usr/bin/env",
      `${HIRE_ENV}=${ownedHire}`,
      ...codexCmd(ownedDir),
    );
    journal.write({
      hireId: ownedHire,
      fingerprint: "f",
      state: "launch_committed",
      harness: "codex",
      reservedAtMs: Date.now(),
      committedAtMs: Date.now(),
      paneId: ownedPane,
      session: "fleet",
    });
    host = new TmuxPaneHost({ socketName: tmuxName, pollMs: 200, tmuxBin: TMUX });
    // As the agent runs it: with this OS's kernel proofs, so a daemon seat is proven by the socket-backend proof.
    const hires = new HostJournal(join(cx.root, "agent-state"));
    adapter = new CodexAdapter({
      clock: systemMonotonicClock,
      paneHost: host,
      proofs: selectProofProvider("linux", systemMonotonicClock),
      hires: { launched: (id) => hires.read(id) },
    });
    adapters.register(adapter);
    seats = new SeatBook(cx.root);
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

  const seatIn = (paneId: string) => seats.all().find((s) => s.pane?.paneId === paneId);
  const cmd = (seat: SeatRecord, text: string, mode: DeliverCommand["mode"]): DeliverCommand => ({
    seatName: seat.name,
    deliveryId: crypto.randomUUID(),
    text,
    mode,
    conversationId: "c1",
    occupantId: seat.occupantId,
    authorityAgeMs: 0,
    arrivedAtMs: systemMonotonicClock.nowMs(),
  });
  const deps = () => ({ seats, adapters, clock: systemMonotonicClock });

  it("finds the TUI's seat from the pane's own processes: its CODEX_HOME's daemon socket and its thread; a plain shell pane is no seat", async () => {
    const seat = await until(() => {
      const s = seatIn(daemonPane);
      return s && codexControlOf(s)?.threadId ? s : undefined;
    }, "a codex seat with its thread in the daemon pane");
    expect(seat.kind).toBe(SeatKind.Codex);
    expect(seat.pane).toMatchObject({ host: "tmux", paneId: daemonPane });
    expect(codexControlOf(seat)).toMatchObject({
      codexHome: cx.codexHome,
      cwd: cx.workDir,
      launch: "shared_daemon",
      endpoint: join(cx.codexHome, "app-server-control", "app-server-control.sock"),
    });
    expect(seatIn(plainPane)).toBeUndefined();
  });

  it("rule 47: an unowned TUI (not launched by this agent) advertises [steer, queue] from the live control it attached, and no interrupt, through the wire seat", async () => {
    const seat = seatIn(daemonPane)!;
    const { snapshot, proofs } = await adapter.inspect(seat);
    expect(
      proofs.map((p) => [p.kind, p.outcome]),
      JSON.stringify(proofs, null, 1),
    ).toEqual([
      ["codex_process", "proven"],
      ["pane_occupant", "proven"],
      ["codex_home", "proven"],
      ["codex_thread", "proven"],
      // The kernel's view of the daemon: the agent's connection and the TUI's both end in it, on its socket, one home.
      ["connection_socket", "proven"],
      ["tui_connection", "proven"],
      ["backend_listener", "proven"],
      ["private_home", "proven"],
      ["process_identity", "proven"],
    ]);
    expect(snapshot.inputCapabilities).toEqual({
      deliveryModes: ["steer", "queue"],
      interrupt: false,
      nextTurnOnly: false,
    });
    const wire = toWireSeat(seat, snapshot);
    expect(wire.inputCapabilities).toMatchObject({
      deliveryModes: [PbDeliveryMode.STEER, PbDeliveryMode.QUEUE],
      interrupt: false,
      nextTurnOnly: false,
    });
    expect(codexControlOf(seat)?.ownedByHire).toBeUndefined();
    expect((await adapter.stop(seat)).result).toBe("unsupported");
  });

  it("rules 36 and 47: the TUI this agent's hire launched is owned: [steer, queue] + interrupt; explicit Queue goes to Codex's own queue on both owned and unowned seats", async () => {
    const owned = await until(() => {
      const s = seatIn(ownedPane);
      return s && codexControlOf(s)?.threadId ? s : undefined;
    }, "a codex seat with its thread in the hired pane");
    expect(codexControlOf(owned)?.ownedByHire).toBe(ownedHire);
    const { snapshot, proofs } = await adapter.inspect(owned);
    expect(
      proofs.every((p) => p.outcome === "proven"),
      JSON.stringify(proofs, null, 1),
    ).toBe(true);
    expect(snapshot.inputCapabilities).toEqual({
      deliveryModes: ["steer", "queue"],
      interrupt: true,
      nextTurnOnly: false,
    });
    // The stop is offered and reaches Codex (an idle thread has no turn to interrupt).
    expect((await adapter.stop(owned)).result).toBe("already_finished");
    // Discovery that ran before the hire's journal named the pane recorded no owner: inspect finds it.
    const early: SeatRecord = {
      ...owned,
      kind: SeatKind.Codex,
      control: { ...codexControlOf(owned)!, ownedByHire: undefined },
    };
    expect((await adapter.inspect(early)).snapshot.inputCapabilities.interrupt).toBe(true);
    for (const seat of [owned, seatIn(daemonPane)!]) {
      // Under load the 250 ms gate may refuse a write (proof_stale, nothing written): a new delivery, not a resend.
      let v = await deliver(deps(), cmd(seat, `explicit queue to ${seat.name}`, "queue"));
      for (let i = 0; i < 10 && v.reason === "proof_stale"; i++)
        v = await deliver(deps(), cmd(seat, `explicit queue to ${seat.name}`, "queue"));
      expect(v.result, JSON.stringify(v)).toBe(AgentResult.Queued);
      expect(v.nativeReceiptId).toContain("/queue/");
      // Codex runs it at once on the idle thread; the next tests want the thread idle again.
      await mock.waitFor((q) => q.lastUserText.includes(`explicit queue to ${seat.name}`));
      await until(
        async () => ((await adapter.inspect(seat)).snapshot.status === "idle" ? true : undefined),
        `${seat.name} idle again`,
      );
    }
  });

  it("starts a turn in the idle TUI, then steers the active turn with its exact id; the mock model sees both", async () => {
    const seat = seatIn(daemonPane)!;
    const started = await deliver(deps(), cmd(seat, `tui task ${SLOW_MARKER}`, "auto"));
    expect(started.result, JSON.stringify({ reason: started.reason, detail: started.detail })).toBe(
      AgentResult.Started,
    );
    await mock.waitFor((q) => q.lastUserText.includes("tui task"));
    const steered = await deliver(deps(), cmd(seat, "tui steer", "steer"));
    expect(steered.result).toBe(AgentResult.Steered);
    const req = await mock.waitFor((q) => q.lastUserText === "tui steer");
    expect(req.userTexts.some((t) => t.includes("tui task"))).toBe(true);
    mock.releaseSlow();
  });

  it("a TUI joined to a dedicated app-server with --remote is controlled through that server, not the daemon", async () => {
    const seat = await until(() => {
      const s = seatIn(remotePane);
      return s && codexControlOf(s)?.threadId ? s : undefined;
    }, "a codex seat with its thread in the --remote pane");
    expect(codexControlOf(seat)).toMatchObject({
      launch: "remote",
      endpoint: `unix://${remoteSock}`,
      cwd: join(cx.root, "w3"),
    });
    const v = await deliver(deps(), cmd(seat, "remote hello", "auto"));
    expect(v.result).toBe(AgentResult.Started);
    await mock.waitFor((q) => q.lastUserText === "remote hello");
  });

  it("a --no-daemon TUI is a seat without control: no modes, and explicit Steer or Queue is refused before any write", async () => {
    const seat = await until(() => seatIn(noDaemonPane), "a codex seat in the --no-daemon pane");
    expect(codexControlOf(seat)).toMatchObject({ launch: "no_daemon", endpoint: undefined });
    const { snapshot } = await adapter.inspect(seat);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: [], interrupt: false, nextTurnOnly: false });
    for (const mode of ["steer", "queue"] as const) {
      const v = await deliver(deps(), cmd(seat, `refused ${mode}`, mode));
      expect(v).toMatchObject({ result: AgentResult.Rejected, reason: "delivery_mode_unsupported" });
    }
    const auto = await deliver(deps(), cmd(seat, "refused auto", "auto"));
    expect(auto).toMatchObject({ result: AgentResult.NotSent, reason: "no_native_control" });
    expect((await adapter.stop(seat)).result).toBe("unsupported");
    expect(mock.countRequestsWith("refused")).toBe(0);
  });

  it("an occupant change replaces the seat record and its control; a pane that stops running Codex loses its seat", async () => {
    const before = seatIn(noDaemonPane)!;
    tmux("respawn-pane", "-k", "-t", noDaemonPane, ...codexCmd(join(cx.root, "w2"), "--no-daemon"));
    const after = await until(() => {
      const s = seatIn(noDaemonPane);
      return s && s.occupantId !== before.occupantId ? s : undefined;
    }, "a new occupant in the respawned pane");
    expect(codexControlOf(after)!.tuiPid).not.toBe(codexControlOf(before)!.tuiPid);
    // The old occupant's proofs and control are not the new one's.
    expect((await deliver(deps(), { ...cmd(after, "x", "auto"), occupantId: before.occupantId })).reason).toBe(
      "occupant_changed",
    );
    tmux("respawn-pane", "-k", "-t", noDaemonPane, "/bin/sleep", "600");
    await until(() => (seatIn(noDaemonPane) ? undefined : true), "the seat gone once Codex left the pane");
  });
});
