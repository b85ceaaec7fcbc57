/**
 * A hire whose answer is lost after its pane opened (rule 52, scenario 27), with the real
 * Pi in real tmux: the agent launches the seat and answers, and the controller's
 * drop_hire_answer fault point loses that answer as a cut link would, so the lead gets
 * start_unconfirmed while the seat goes on. The owner's `hire-receipt settle
 * not-launched` is refused because the census finds the hire's pane and process;
 * reconcile_seat_call({hireId}) then finds the seat from the host journal; nothing is
 * launched twice and the brief reaches the model once.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { runCli } from "../kit/cli.js";
import { connectLead } from "../kit/mcp-client.js";
import { requireHarness } from "./kit/harness-bin.js";
import { piHireEnv, type HireEnv } from "./kit/hire-envs.js";

const bin = requireHarness("pi");
const META = "clankie/seat-call";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(bin)("hire_agent: the answer is lost after the pane opened", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  const hireId = randomUUID();
  const marker = `lost-${hireId.slice(0, 8)}`;
  let args: Record<string, unknown>;

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(bin!, mock.url);
    fleet = await startHireFleet("pglite", { hire: env.hire, controller: { fault: "drop_hire_answer" } });
    args = {
      harness: "pi",
      workingDirectory: env.work,
      title: "pi worker",
      role: "tester",
      brief: `${marker}: go`,
      model: env.model,
    };
  });
  afterAll(async () => {
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });

  it("the lead gets start_unconfirmed with the original id, uncertain in _meta, never a second launch", async () => {
    const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({
      outcome: "failed",
      reason: "start_unconfirmed",
      hireId,
      deliveryStage: "uncertain",
      reconcileTool: "reconcile_seat_call",
      launchCommitted: true,
    });
    expect(res._meta?.[META]).toMatchObject({ id: hireId, state: "uncertain", hireId });
    // What the owner can do (issue 12 item 3: control.reason and control.fix where the owner can act).
    expect(res.structuredContent!.control).toEqual({
      reason: "start_unconfirmed",
      fix: expect.stringMatching(new RegExp(`clankie hire-receipt settle ${hireId} not-launched`)),
    });
    // The pane did open: the answer was lost, not the launch.
    for (let i = 0; i < 100 && fleet.panes().filter((p) => p.hire === hireId).length === 0; i++) await sleep(100);
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    // A repeat while unresolved returns the uncertainty, and launches nothing.
    const again = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent).toMatchObject({ reason: "start_unconfirmed", hireId });
  });

  it("hire-receipt list shows it unresolved with its age", async () => {
    const list = await runCli(["hire-receipt", "list", "--json", "--state-dir", fleet.stateDir]);
    expect(list.code, list.stderr).toBe(0);
    const rows = (
      JSON.parse(list.stdout) as {
        unresolved: { id: string; state: string; ageMs: number; conversation: string; machine: string }[];
      }
    ).unresolved;
    expect(rows.find((r) => r.id === hireId)).toMatchObject({
      state: "start_unconfirmed",
      conversation: "global-default",
      machine: "testbox",
      ageMs: expect.any(Number),
    });
  });

  it("settle not-launched is refused: a fresh census finds the hire's pane and process", async () => {
    expect(fleet.markedProcesses(hireId).length).toBeGreaterThan(0);
    const settle = await runCli([
      "hire-receipt",
      "settle",
      hireId,
      "not-launched",
      "--json",
      "--state-dir",
      fleet.stateDir,
    ]);
    expect(settle.code).toBe(1);
    const body = JSON.parse(settle.stdout) as { state: string; detail: string };
    expect(body.state).toBe("refused");
    expect(body.detail).toMatch(/does not prove/);
    expect(body.detail).toMatch(/processes \d+/);
  });

  it("reconcile_seat_call finds the seat from the host journal; a replay starts nothing; the brief reached the model once", async () => {
    let rec;
    for (let i = 0; i < 120; i++) {
      rec = await fleet.lead.call("reconcile_seat_call", { hireId });
      if (rec._meta?.[META] && (rec._meta[META] as { state: string }).state === "settled") break;
      await sleep(500);
    }
    expect(rec!.structuredContent, JSON.stringify(rec!.structuredContent)).toMatchObject({
      outcome: "spawned",
      hireId,
      recoveredFrom: "host_journal",
    });
    const seat = rec!.structuredContent!.seat as string;
    expect(seat).toMatch(/^testbox\/pi-/);
    const roots = fleet.launchedRoots(hireId);
    const replay = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(replay.structuredContent).toEqual(rec!.structuredContent);
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
    await mock.waitForRequest(marker, 60_000);
    expect(mock.userMessagesContaining(marker)).toBe(1);
    const list = await runCli(["hire-receipt", "list", "--json", "--state-dir", fleet.stateDir]);
    expect((JSON.parse(list.stdout) as { unresolved: { id: string }[] }).unresolved.map((r) => r.id)).not.toContain(
      hireId,
    );
  });
});

describe.runIf(bin)("hire_agent: the controller stops while a hire is in flight", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  const hireId = randomUUID();
  const marker = `stop-${hireId.slice(0, 8)}`;

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(bin!, mock.url);
    fleet = await startHireFleet("pglite", { hire: env.hire, controller: { shutdownGraceMs: 100 } });
  });
  afterAll(async () => {
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });

  it("the in-flight hire answers start_unconfirmed; after a restart reconcile finds the seat in the host journal; nothing launches twice", async () => {
    const args = {
      harness: "pi",
      workingDirectory: env.work,
      title: "pi worker",
      role: "tester",
      brief: `${marker}: go`,
      model: env.model,
    };
    const call = fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    for (let i = 0; i < 200 && fleet.panes().filter((p) => p.hire === hireId).length === 0; i++) await sleep(50);
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    const restarted = fleet.restartController();
    const res = await call;
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "start_unconfirmed",
      hireId,
    });
    await restarted;
    const lead = await connectLead(fleet.controller.mcpUrl, fleet.controller.leadToken);
    try {
      let rec;
      for (let i = 0; i < 120; i++) {
        rec = await lead.call("reconcile_seat_call", { hireId });
        if ((rec._meta?.[META] as { state?: string } | undefined)?.state === "settled") break;
        await sleep(500);
      }
      expect(rec!.structuredContent, JSON.stringify(rec!.structuredContent)).toMatchObject({
        outcome: "spawned",
        hireId,
        recoveredFrom: "host_journal",
      });
      const again = await lead.call("hire_agent", args, { [META]: { hireId } });
      expect(again.structuredContent).toEqual(rec!.structuredContent);
      expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
      await mock.waitForRequest(marker, 60_000);
      expect(mock.userMessagesContaining(marker)).toBe(1);
    } finally {
      await lead.close();
    }
  });
});
