/**
 * The hire's Herdr pane opener against the fake Herdr (Herdr cannot be installed here):
 * pane.split in the working directory, the pane tagged with the hire id, agent.start with
 * the harness; a refused agent.start closes exactly the pane this hire opened; an absent
 * socket is herdr_unreachable with a fix; no typing method is ever called. tuiState (ADR 0040
 * addendum, Herdr): what keeps an agent-started Codex server alive.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HerdrPaneOpener } from "../../../../node-agent/hire/herdr-opener.js";
import { TYPING_METHODS } from "../../../../node-agent/panes/herdr-client.js";
import { startFakeHerdr, type FakeHerdr } from "../../../kit/fake-herdr.js";

const HIRE = "7b0c8f6e-2a8b-4f3e-9d55-0c1f2e3a4b5c";

describe("HerdrPaneOpener", () => {
  let herdr: FakeHerdr;
  beforeEach(async () => {
    herdr = await startFakeHerdr();
  });
  afterEach(async () => {
    expect(herdr.calls.filter((c) => TYPING_METHODS.includes(c.method))).toEqual([]);
    await herdr.close();
  });

  it("opens one pane with pane.split, tags it with the hire id and starts the harness with agent.start", async () => {
    const bystander = herdr.addPane({ pane_id: "w1:p1" });
    const opener = new HerdrPaneOpener(herdr.socketPath);
    const opened = await opener.open({
      hireId: HIRE,
      title: "t",
      cwd: "/work",
      argv: ["/bin/codex", "-C", "/work"],
      env: {},
      harness: "codex",
    });
    expect(opened.ok).toBe(true);
    const paneId = opened.ok ? opened.pane.paneId : "";
    expect(paneId).not.toBe(bystander.pane_id);
    expect(herdr.calls.map((c) => c.method)).toEqual(["pane.split", "pane.report_metadata", "agent.start"]);
    expect(herdr.calls[0]!.params).toMatchObject({ direction: "right", cwd: "/work", focus: false });
    expect(herdr.calls[2]!.params).toMatchObject({
      kind: "codex",
      pane_id: paneId,
      args: ["-C", "/work"],
      timeout_ms: 30_000,
    });
    expect(await opener.panesOf(HIRE)).toEqual([{ paneId, session: "w1" }]);
    expect(await opener.panesOf("00000000-0000-4000-8000-000000000000")).toEqual([]);
  });

  it("a refused agent.start closes the pane this hire opened, and no other", async () => {
    herdr.addPane({ pane_id: "w1:p1" });
    herdr.failNextAgentStart("agent_unavailable", "codex is not installed");
    const opener = new HerdrPaneOpener(herdr.socketPath);
    const opened = await opener.open({
      hireId: HIRE,
      title: "t",
      cwd: "/work",
      argv: ["/bin/codex"],
      env: {},
      harness: "codex",
    });
    expect(opened).toMatchObject({ ok: false, reason: "launch_failed", paneClosed: true });
    const split = herdr.calls.find((c) => c.method === "pane.split");
    const closes = herdr.calls.filter((c) => c.method === "pane.close");
    expect(closes).toHaveLength(1);
    expect(closes[0]!.params.pane_id).toBe((opened as { paneId: string }).paneId);
    expect(split).toBeDefined();
    expect(await opener.panesOf(HIRE)).toEqual([]);
    expect((await opener.liveness("w1:p1")).state).toBe("running");
  });

  it("an unreachable socket is herdr_unreachable with control.fix, and nothing is called", async () => {
    const opener = new HerdrPaneOpener(`${herdr.socketPath}.absent`);
    const opened = await opener.open({
      hireId: HIRE,
      title: "t",
      cwd: "/work",
      argv: ["/bin/pi"],
      env: {},
      harness: "pi",
    });
    expect(opened).toMatchObject({ ok: false, reason: "herdr_unreachable" });
    expect((opened as { controlFix: string }).controlFix).toMatch(/start Herdr/);
    expect(herdr.calls).toEqual([]);
  });

  it("liveness reads the pane's visible screen and tells a closed pane", async () => {
    const opener = new HerdrPaneOpener(herdr.socketPath);
    herdr.addPane({ pane_id: "w1:p7" });
    herdr.setScreen("w1:p7", "Do you trust the files in this folder?");
    expect(await opener.liveness("w1:p7")).toEqual({
      state: "running",
      screen: "Do you trust the files in this folder?",
    });
    herdr.closePane("w1:p7");
    expect((await opener.liveness("w1:p7")).state).toBe("gone");
  });

  it("ADR 0040 addendum (Herdr lifecycle): tuiState is running while the pane runs a process on the socket (argv or cmdline), gone when the pane or that process is, unknown when Herdr cannot be asked", async () => {
    const remote = "unix:///s/hires/h/codex.sock";
    const fg = (p: { argv?: string[]; cmdline?: string }) => ({
      shell_pid: 1,
      foreground_process_group_id: 1,
      tty: null,
      foreground_processes: [{ pid: 9, name: "codex", ...p }],
    });
    herdr.addPane({ pane_id: "w1:p1" }, fg({ argv: ["/bin/codex", "--remote", remote, "-C", "/w"] }));
    herdr.addPane({ pane_id: "w1:p2" }, fg({ cmdline: `/bin/codex --remote ${remote} -C /w` }));
    herdr.addPane({ pane_id: "w1:p3" }, fg({ argv: ["/bin/sh"] }));
    const opener = new HerdrPaneOpener(herdr.socketPath);
    expect(await opener.tuiState("w1:p1", remote)).toBe("running");
    expect(await opener.tuiState("w1:p2", remote)).toBe("running");
    expect(await opener.tuiState("w1:p1", "unix:///s/other.sock")).toBe("gone");
    expect(await opener.tuiState("w1:p3", remote)).toBe("gone");
    expect(await opener.tuiState("w1:p404", remote)).toBe("gone");
    expect(await new HerdrPaneOpener(`${herdr.socketPath}.absent`).tuiState("w1:p1", remote)).toBe("unknown");
  });
});
