/**
 * The Herdr pane host against a fake Herdr server that follows the published schema
 * (protocol 20; Herdr itself cannot be installed here, see test/kit/fake-herdr.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HerdrPaneHost, HerdrUnavailableError } from "../../../../node-agent/panes/herdr.js";
import { TYPING_METHODS } from "../../../../node-agent/panes/herdr-client.js";
import type { PaneEvent } from "../../../../node-agent/panes/pane-host.js";
import { startFakeHerdr, type FakeHerdr } from "../../../kit/fake-herdr.js";

async function until(pred: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (pred()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never happened: ${what}`);
}

/** The set of panes a consumer believes exist after applying `events` in order. */
function openPanes(events: PaneEvent[]): Set<string> {
  const open = new Set<string>();
  for (const e of events) {
    if (e.kind === "pane_created" || e.kind === "pane_updated") open.add(e.paneId);
    if (e.kind === "pane_closed") open.delete(e.paneId);
  }
  return open;
}

describe("HerdrPaneHost", () => {
  let herdr: FakeHerdr;
  let host: HerdrPaneHost;

  beforeEach(async () => {
    herdr = await startFakeHerdr();
    host = new HerdrPaneHost({ socketPath: herdr.socketPath, sessionName: "main", reconnectMs: 20 });
  });
  afterEach(async () => {
    host.close();
    await herdr.close();
  });

  it("reads panes, agents and foreground processes in the pane-host shapes, and speaks protocol 20", async () => {
    herdr.addPane(
      {
        pane_id: "w1:p1",
        title: "worker",
        cwd: "/repo",
        agent: "codex",
        agent_status: "working",
        agent_session: { source: "herdr:codex", agent: "codex", kind: "id", value: "thread-1" },
      },
      {
        shell_pid: 100,
        foreground_process_group_id: 200,
        tty: "/dev/pts/4",
        foreground_processes: [{ pid: 200, name: "codex", argv: ["codex", "--no-alt-screen"], cwd: "/repo" }],
      },
    );
    const ping = await host.ping();
    expect(ping.ok && ping.result.protocol).toBe(20);
    expect(await host.listPanes()).toEqual([
      {
        paneId: "w1:p1",
        terminalId: "term_1",
        sessionId: "main",
        title: "worker",
        cwd: "/repo",
        agentStatus: "working",
        agentSession: { agent: "codex", kind: "id", value: "thread-1" },
      },
    ]);
    expect(await host.getPane("w9:p9")).toBeUndefined();
    expect((await host.agents())[0]).toMatchObject({
      paneId: "w1:p1",
      agent: "codex",
      agentStatus: "working",
      interactiveReady: true,
    });
    expect(await host.processInfo("w1:p1")).toEqual({
      paneId: "w1:p1",
      shellPid: 100,
      foregroundProcessGroupId: 200,
      tty: "/dev/pts/4",
      foregroundProcesses: [{ pid: 200, name: "codex", argv: ["codex", "--no-alt-screen"], cwd: "/repo" }],
    });
  });

  it("bootstraps without a gap: subscribe first, then snapshot, then the events buffered in between", async () => {
    herdr.addPane({ pane_id: "w1:p1" });
    herdr.addPane({ pane_id: "w1:p2" });
    // Changes that land after the subscription but before the snapshot is answered.
    herdr.beforeNextSnapshot(() => {
      herdr.addPane({ pane_id: "w1:p3" });
      herdr.closePane("w1:p2");
    });
    const events: PaneEvent[] = [];
    const stop = await host.subscribe((e) => events.push(e));
    const methods = herdr.calls.map((c) => c.method);
    expect(methods.indexOf("events.subscribe")).toBeLessThan(methods.indexOf("session.snapshot"));
    herdr.addPane({ pane_id: "w1:p4" });
    await until(() => events.some((e) => e.paneId === "w1:p4"), "live event after bootstrap");
    expect([...openPanes(events)].sort()).toEqual(["w1:p1", "w1:p3", "w1:p4"]);
    stop();
  });

  it("delivers a burst of events complete and in order", async () => {
    const events: PaneEvent[] = [];
    const stop = await host.subscribe((e) => events.push(e));
    for (let i = 0; i < 300; i++) herdr.setAgentStatus("w1:p1", "idle"); // unknown pane: ignored by the fake
    herdr.addPane({ pane_id: "w1:p1" });
    for (let i = 0; i < 300; i++) herdr.setAgentStatus("w1:p1", i % 2 ? "working" : "idle");
    await until(() => events.filter((e) => e.kind === "agent_status_changed").length === 300, "300 status events");
    const statuses = events.flatMap((e) => (e.kind === "agent_status_changed" ? [e.agentStatus] : []));
    expect(statuses).toEqual(Array.from({ length: 300 }, (_, i) => (i % 2 ? "working" : "idle")));
    stop();
  });

  it("re-bootstraps after the subscription socket drops and reports panes that closed meanwhile", async () => {
    herdr.addPane({ pane_id: "w1:p1" });
    herdr.addPane({ pane_id: "w1:p2" });
    const events: PaneEvent[] = [];
    const stop = await host.subscribe((e) => events.push(e));
    herdr.dropSubscriptions();
    herdr.closePane("w1:p2"); // nobody is subscribed: only the resync can tell
    herdr.addPane({ pane_id: "w1:p5" });
    await until(() => herdr.subscriberCount() === 1 && openPanes(events).has("w1:p5"), "resubscribed");
    expect([...openPanes(events)].sort()).toEqual(["w1:p1", "w1:p5"]);
    stop();
  });

  it("a garbage line ends the pending call as a typed failure, without a crash, and the next call reconnects", async () => {
    herdr.addPane({ pane_id: "w1:p1" });
    herdr.corruptNextReply("pane.list", "this is not json\n");
    await expect(host.listPanes()).rejects.toBeInstanceOf(HerdrUnavailableError);
    const r = await host.call("pane.list", {});
    expect(r.ok).toBe(true);
    expect(await host.listPanes()).toHaveLength(1);
  });

  it("a truncated frame followed by a vanished socket is a typed failure, never a guess", async () => {
    herdr.corruptNextReply("pane.list", '{"id":"clankie_1","result":{"type":"pane_li');
    const pending = host.call("pane.list", {});
    await new Promise((r) => setTimeout(r, 20));
    await herdr.close();
    const r = await pending;
    expect(r.ok).toBe(false);
    expect(!r.ok && ["closed", "garbled"].includes(r.kind)).toBe(true);
    const again = await host.call("pane.list", {});
    expect(!again.ok && again.kind).toBe("unreachable");
    herdr = await startFakeHerdr(); // for afterEach
  });

  it("never sends Herdr's typing methods: the client refuses them before they reach the socket", async () => {
    herdr.addPane({ pane_id: "w1:p1" });
    for (const method of TYPING_METHODS) {
      const r = await host.call(method, { pane_id: "w1:p1", text: "hello" });
      expect(!r.ok && r.kind).toBe("forbidden");
    }
    const stop = await host.subscribe(() => {});
    await host.listPanes();
    await host.processInfo("w1:p1");
    stop();
    expect(herdr.calls.map((c) => c.method).filter((m) => TYPING_METHODS.includes(m))).toEqual([]);
  });
});
