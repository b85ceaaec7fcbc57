/**
 * The real Codex TUI in real tmux panes (a private tmux server, `tmux -L`), found by the
 * node agent's seat discovery through the tmux pane host and driven only through the
 * app-server its own CODEX_HOME points at. A `--no-daemon` TUI is a seat with no control:
 * explicit modes are refused before any write. Nothing is ever typed into a pane.
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
import { CodexAdapter, codexControlOf } from "../../node-agent/harnesses/codex.js";
import { TmuxPaneHost } from "../../node-agent/panes/tmux.js";
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

  /** The pane's command: the TUI with this test's isolated environment (arguments, never a shell line). */
  const codexCmd = (cwd: string, ...flags: string[]) => ["/usr/bin/env", ...Object.entries(cx.env).map(([k, v]) => `${k}=${v}`), bin!, "-C", cwd, ...flags];

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer();
    cx = makeCodexEnv(bin, mock.baseUrl);
    const otherDir = join(cx.root, "w2");
    const remoteDir = join(cx.root, "w3");
    mkdirSync(otherDir);
    mkdirSync(remoteDir);
    const trust = [otherDir, remoteDir].map((d) => `\n[projects."${d}"]\ntrust_level = "trusted"\n`).join("");
    writeFileSync(join(cx.codexHome, "config.toml"), readFileSync(join(cx.codexHome, "config.toml"), "utf8") + trust);
    remoteSock = join(cx.root, "dedicated.sock");
    await startAppServer(bin, cx, remoteSock);
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "fleet", "-x", "200", "-y", "50", "-c", cx.workDir, ...codexCmd(cx.workDir));
    daemonPane = tmux("display-message", "-p", "-t", "fleet:0", "#{pane_id}");
    plainPane = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "fleet", "/bin/sleep", "600");
    noDaemonPane = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "fleet", ...codexCmd(otherDir, "--no-daemon"));
    remotePane = tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "fleet", ...codexCmd(remoteDir, "--remote", `unix://${remoteSock}`));
    host = new TmuxPaneHost({ socketName: tmuxName, pollMs: 200, tmuxBin: TMUX });
    // As the agent runs it: with this OS's kernel proofs, so a daemon seat is proven by the socket-backend proof.
    adapter = new CodexAdapter({ clock: systemMonotonicClock, paneHost: host, proofs: selectProofProvider("linux", systemMonotonicClock) });
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
    expect(codexControlOf(seat)).toMatchObject({ codexHome: cx.codexHome, cwd: cx.workDir, launch: "shared_daemon", endpoint: join(cx.codexHome, "app-server-control", "app-server-control.sock") });
    expect(seatIn(plainPane)).toBeUndefined();
  });

  it("advertises [steer, queue] + interrupt from the live control it attached, through the wire seat", async () => {
    const seat = seatIn(daemonPane)!;
    const { snapshot, proofs } = await adapter.inspect(seat);
    expect(proofs.map((p) => [p.kind, p.outcome]), JSON.stringify(proofs, null, 1)).toEqual([
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
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: ["steer", "queue"], interrupt: true, nextTurnOnly: false });
    const wire = toWireSeat(seat, snapshot);
    expect(wire.inputCapabilities).toMatchObject({ deliveryModes: [PbDeliveryMode.STEER, PbDeliveryMode.QUEUE], interrupt: true, nextTurnOnly: false });
  });

  it("starts a turn in the idle TUI, then steers the active turn with its exact id; the mock model sees both", async () => {
    const seat = seatIn(daemonPane)!;
    const started = await deliver(deps(), cmd(seat, `tui task ${SLOW_MARKER}`, "auto"));
    expect(started.result).toBe(AgentResult.Started);
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
    expect(codexControlOf(seat)).toMatchObject({ launch: "remote", endpoint: `unix://${remoteSock}`, cwd: join(cx.root, "w3") });
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
    expect((await deliver(deps(), { ...cmd(after, "x", "auto"), occupantId: before.occupantId })).reason).toBe("occupant_changed");
    tmux("respawn-pane", "-k", "-t", noDaemonPane, "/bin/sleep", "600");
    await until(() => (seatIn(noDaemonPane) ? undefined : true), "the seat gone once Codex left the pane");
  });
});
