/**
 * Seat discovery over the Herdr pane host (fake server, protocol 20) with the real Codex
 * adapter recognising a real process: seats appear from panes' processes (not titles),
 * every registered adapter is asked, an occupant change replaces the record, a closed pane
 * loses its seat, and an unreachable host removes nothing.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SeatKind } from "../../../../shared/verdicts.js";
import { silentLogger } from "../../../../shared/logger.js";
import { CodexAdapter, codexControlOf } from "../../../../node-agent/harnesses/codex/adapter.js";
import { AdapterRegistry } from "../../../../node-agent/harnesses/registry.js";
import type { HarnessAdapter } from "../../../../node-agent/harnesses/adapter.js";
import { HerdrPaneHost } from "../../../../node-agent/panes/herdr.js";
import { SeatBook } from "../../../../node-agent/seats/seat-book.js";
import { scanPanes, startSeatDiscovery } from "../../../../node-agent/seats/discovery.js";
import { systemMonotonicClock } from "../../../../node-agent/proofs/proof.js";
import { startFakeHerdr, type FakeHerdr } from "../../../kit/fake-herdr.js";
import { spawnFakeCodex, type FakeCodexProcess } from "../../../kit/fake-codex-process.js";

const dirs: string[] = [];
/** A state dir for the seat book, removed after the run. */
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "disc-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function until(pred: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (pred()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never happened: ${what}`);
}

async function asHerdrProcesses(p: FakeCodexProcess) {
  const info = await p.processInfo("x");
  return {
    shell_pid: info.shellPid,
    foreground_process_group_id: info.foregroundProcessGroupId,
    tty: "/dev/pts/9",
    foreground_processes: info.foregroundProcesses,
  };
}

describe("seat discovery", () => {
  let herdr: FakeHerdr;
  let host: HerdrPaneHost;
  let seats: SeatBook;
  let registry: AdapterRegistry;
  const asked: string[] = [];
  const procs: FakeCodexProcess[] = [];

  beforeEach(async () => {
    herdr = await startFakeHerdr();
    host = new HerdrPaneHost({ socketPath: herdr.socketPath, reconnectMs: 20 });
    seats = new SeatBook(tempDir());
    // A second harness's adapter: discovery must ask every registered adapter, not only Codex.
    const other: HarnessAdapter = {
      kind: SeatKind.Claude,
      inspect: () => Promise.reject(new Error("unused")),
      write: () => Promise.reject(new Error("unused")),
      readSession: () => Promise.reject(new Error("unused")),
      discover: async (pane) => {
        asked.push(pane.paneId);
        return undefined;
      },
    };
    registry = new AdapterRegistry()
      .register(new CodexAdapter({ clock: systemMonotonicClock, callTimeoutMs: 300 }))
      .register(other);
  });
  afterEach(async () => {
    host.close();
    await herdr.close();
    for (const p of procs.splice(0)) await p.kill();
    asked.length = 0;
  });

  it("a pane is a seat when its processes are a recognised harness; a title claiming Codex is not enough", async () => {
    const codex = await spawnFakeCodex(["--no-daemon"]);
    procs.push(codex);
    herdr.addPane({ pane_id: "w1:p1", title: "shell" }, await asHerdrProcesses(codex));
    herdr.addPane(
      {
        pane_id: "w1:p2",
        title: "codex",
        agent: "codex",
        agent_session: { source: "herdr:codex", agent: "codex", kind: "id", value: "t-1" },
      },
      {
        shell_pid: 1,
        foreground_process_group_id: 1,
        tty: null,
        foreground_processes: [{ pid: process.pid, name: "node", argv: ["node"] }],
      },
    );
    const report = await scanPanes(host, registry, seats, silentLogger);
    expect(report).toMatchObject({ ok: true, seats: ["codex-w1p1"], panes: 2 });
    const seat = seats.get("codex-w1p1")!;
    expect(seat.pane).toMatchObject({ host: "herdr", paneId: "w1:p1" });
    expect(codexControlOf(seat)).toMatchObject({ tuiPid: codex.pid, codexHome: codex.codexHome });
    expect(asked).toEqual(["w1:p2"]); // Codex claimed w1:p1 first; the other adapter was asked about the rest
  });

  it("follows the pane host's events: a new occupant replaces the seat record, a closed pane loses its seat", async () => {
    const a = await spawnFakeCodex(["--no-daemon"]);
    procs.push(a);
    herdr.addPane({ pane_id: "w1:p1" }, await asHerdrProcesses(a));
    const discovery = await startSeatDiscovery({
      host,
      adapters: registry,
      seats,
      logger: silentLogger,
      rescanMs: 60_000,
    });
    expect(seats.get("codex-w1p1")).toBeDefined();
    const firstOccupant = seats.get("codex-w1p1")!.occupantId;
    const changes: number[] = [];
    seats.onChange(() => changes.push(1));

    // The pane's terminal is replaced by another Codex process: closed and re-created in Herdr.
    const b = await spawnFakeCodex(["--no-daemon"]);
    procs.push(b);
    herdr.closePane("w1:p1");
    herdr.addPane({ pane_id: "w1:p1" }, await asHerdrProcesses(b));
    await until(() => {
      const s = seats.get("codex-w1p1");
      return s !== undefined && codexControlOf(s)?.tuiPid === b.pid;
    }, "new occupant");
    const replaced = seats.get("codex-w1p1")!;
    expect(replaced.occupantId).not.toBe(firstOccupant);
    expect(codexControlOf(replaced)).not.toMatchObject({ tuiPid: a.pid });

    herdr.closePane("w1:p1");
    await until(() => seats.get("codex-w1p1") === undefined, "seat removed");
    expect(changes.length).toBeGreaterThan(0);
    discovery.close();
  });

  it("an unreachable pane host removes no seat: not knowing the panes is not 'no panes'", async () => {
    const a = await spawnFakeCodex(["--no-daemon"]);
    procs.push(a);
    herdr.addPane({ pane_id: "w1:p1" }, await asHerdrProcesses(a));
    await scanPanes(host, registry, seats, silentLogger);
    await herdr.close();
    const report = await scanPanes(host, registry, seats, silentLogger);
    expect(report.ok).toBe(false);
    expect(seats.get("codex-w1p1")).toBeDefined();
    herdr = await startFakeHerdr(); // for afterEach
  });

  it("discovered seats live in memory only; persisted mailbox seats keep their names", async () => {
    const dir = tempDir();
    const book = new SeatBook(dir);
    book.add("inbox", SeatKind.Mailbox, "inbox");
    expect(
      book.putDiscovered({ name: "inbox", kind: SeatKind.Codex, title: "", occupantId: "x", createdAtMs: 0 }),
    ).toBe(false);
    expect(
      book.putDiscovered({ name: "codex-1", kind: SeatKind.Codex, title: "", occupantId: "y", createdAtMs: 0 }),
    ).toBe(true);
    expect(new SeatBook(dir).all().map((s) => s.name)).toEqual(["inbox"]);
  });
});
