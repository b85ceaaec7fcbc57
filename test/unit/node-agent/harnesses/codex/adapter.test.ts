/**
 * The Codex adapter's recognition and capability rules without the real binary: argv
 * parsing, finding the TUI among a pane's processes (from /proc, with its own CODEX_HOME),
 * and capabilities that exist only with live control (rules 38, 45-47), shown through the
 * wire seat and enforced by the delivery pipeline before any write.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { AgentResult, SeatKind } from "../../../../../shared/verdicts.js";
import {
  codexLaunchFromArgs,
  daemonSocketPath,
  findCodexTui,
} from "../../../../../node-agent/harnesses/codex/process.js";
import { CodexAdapter, codexControlOf, codexSeatName } from "../../../../../node-agent/harnesses/codex/adapter.js";
import { AdapterRegistry } from "../../../../../node-agent/harnesses/registry.js";
import { SeatBook } from "../../../../../node-agent/seats/seat-book.js";
import { deliver } from "../../../../../node-agent/deliver/deliver.js";
import { toWireSeat } from "../../../../../node-agent/service/wire-seat.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import { LinuxProofProvider } from "../../../../../node-agent/proofs/linux.js";

const linux = new LinuxProofProvider();
import type { PaneInfo } from "../../../../../node-agent/panes/pane-host.js";
import { spawnFakeCodex, type FakeCodexProcess } from "../../../../kit/fake-codex-process.js";

const dirs: string[] = [];
/** A state dir for the seat book, removed after the run. */
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cx-unit-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const pane: PaneInfo = {
  paneId: "%7",
  terminalId: "@1",
  sessionId: "s",
  title: "worker",
  cwd: "/",
  agentStatus: "unknown",
};

describe("codex-process.codexLaunchFromArgs", () => {
  it("reads the control endpoint from the TUI's own flags: --remote, --no-daemon, else the shared daemon", () => {
    expect(codexLaunchFromArgs([])).toMatchObject({ isTui: true, launch: "shared_daemon" });
    expect(codexLaunchFromArgs(["--remote", "unix:///x.sock"])).toMatchObject({
      isTui: true,
      launch: "remote",
      remote: "unix:///x.sock",
    });
    expect(codexLaunchFromArgs(["--remote=ws://127.0.0.1:9"])).toMatchObject({
      launch: "remote",
      remote: "ws://127.0.0.1:9",
    });
    expect(codexLaunchFromArgs(["--no-daemon", "-m", "gpt", "fix the bug"])).toMatchObject({
      isTui: true,
      launch: "no_daemon",
    });
    expect(codexLaunchFromArgs(["-C", "/repo", "resume"])).toMatchObject({ isTui: true, cd: "/repo" });
  });

  it("does not mistake non-interactive subcommands for a TUI", () => {
    for (const sub of ["app-server", "exec", "mcp-server", "login"])
      expect(codexLaunchFromArgs([sub]).isTui).toBe(false);
    expect(codexLaunchFromArgs(["-m", "exec", "hello"]).isTui).toBe(true); // "exec" there is the -m value
  });
});

describe("codex-process.findCodexTui", () => {
  let proc: FakeCodexProcess | undefined;
  afterEach(async () => {
    await proc?.kill();
    proc = undefined;
  });

  it("uses the pane process's own CODEX_HOME for the daemon socket, never the account default", async () => {
    proc = await spawnFakeCodex([]);
    const tui = (await findCodexTui((await proc.processInfo("%1")).foregroundProcesses, linux))!;
    expect(tui).toMatchObject({
      pid: proc.pid,
      codexHome: proc.codexHome,
      cwd: proc.cwd,
      launch: "shared_daemon",
      endpoint: daemonSocketPath(proc.codexHome),
    });
    expect(tui.endpoint).not.toContain(join(process.env.HOME ?? "/root", ".codex"));
  });

  it("recognises nothing in a pane without a Codex TUI", async () => {
    expect(
      await findCodexTui([{ pid: process.pid, name: "node", argv: ["node", "server.js"] }], linux),
    ).toBeUndefined();
    expect(
      await findCodexTui([{ pid: process.pid, name: "codex", argv: ["codex", "exec", "x"] }], linux),
    ).toBeUndefined();
  });
});

describe("CodexAdapter capabilities", () => {
  let proc: FakeCodexProcess | undefined;
  afterEach(async () => {
    await proc?.kill();
    proc = undefined;
  });

  async function seatFor(p: FakeCodexProcess) {
    const adapter = new CodexAdapter({ clock: systemMonotonicClock, callTimeoutMs: 500 });
    const rec = (await adapter.discover(pane, await p.processInfo(pane.paneId)))!;
    const seats = new SeatBook(tempDir());
    seats.putDiscovered(rec);
    const adapters = new AdapterRegistry().register(adapter);
    return { adapter, rec, deps: { seats, adapters, clock: systemMonotonicClock } };
  }
  const command = (seatName: string, occupantId: string, mode: "auto" | "steer" | "queue") => ({
    seatName,
    deliveryId: crypto.randomUUID(),
    text: "hi",
    mode,
    conversationId: "c",
    occupantId,
    authorityAgeMs: 0,
    arrivedAtMs: systemMonotonicClock.nowMs(),
  });

  it("a --no-daemon TUI is a Codex seat with no modes and no interrupt (rule 38), shown so on the wire", async () => {
    proc = await spawnFakeCodex(["--no-daemon"]);
    const { adapter, rec } = await seatFor(proc);
    expect(rec).toMatchObject({ name: codexSeatName("%7"), kind: SeatKind.Codex, title: "worker" });
    expect(codexControlOf(rec)).toMatchObject({ launch: "no_daemon", endpoint: undefined, tuiPid: proc.pid });
    const { snapshot, proofs } = await adapter.inspect(rec);
    expect(proofs.map((p) => [p.kind, p.outcome])).toEqual([["codex_process", "proven"]]);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: [], interrupt: false, nextTurnOnly: false });
    expect(toWireSeat(rec, snapshot).inputCapabilities).toMatchObject({
      deliveryModes: [],
      interrupt: false,
      nextTurnOnly: false,
    });
  });

  it("an explicit mode the seat does not offer is rejected before any write; Auto is not sent without control", async () => {
    proc = await spawnFakeCodex(["--no-daemon"]);
    const { rec, deps } = await seatFor(proc);
    for (const mode of ["steer", "queue"] as const) {
      expect(await deliver(deps, command(rec.name, rec.occupantId, mode))).toMatchObject({
        result: AgentResult.Rejected,
        reason: "delivery_mode_unsupported",
      });
    }
    expect(await deliver(deps, command(rec.name, rec.occupantId, "auto"))).toMatchObject({
      result: AgentResult.NotSent,
      reason: "no_native_control",
    });
  });

  it("an unreachable app-server is refuted control: no capabilities, offline, nothing sent", async () => {
    proc = await spawnFakeCodex([]); // shared daemon expected under its CODEX_HOME, but none runs
    const { adapter, rec, deps } = await seatFor(proc);
    const { snapshot, proofs } = await adapter.inspect(rec);
    expect(proofs.at(-1)).toMatchObject({ kind: "codex_control", outcome: "refuted" });
    expect(snapshot).toMatchObject({ status: "offline", inputCapabilities: { deliveryModes: [], interrupt: false } });
    expect(await deliver(deps, command(rec.name, rec.occupantId, "queue"))).toMatchObject({
      result: AgentResult.NotSent,
      reason: "proof_refuted",
    });
  });

  it("capabilities vanish with the occupant: once its process is gone the proof is refuted and nothing is written", async () => {
    proc = await spawnFakeCodex(["--no-daemon"]);
    const { adapter, rec, deps } = await seatFor(proc);
    await proc.kill();
    proc = undefined;
    const { snapshot, proofs } = await adapter.inspect(rec);
    expect(proofs[0]).toMatchObject({ kind: "codex_process", outcome: "refuted" });
    expect(snapshot.inputCapabilities.deliveryModes).toEqual([]);
    expect(await deliver(deps, command(rec.name, rec.occupantId, "auto"))).toMatchObject({
      result: AgentResult.NotSent,
      reason: "proof_refuted",
    });
  });
});
