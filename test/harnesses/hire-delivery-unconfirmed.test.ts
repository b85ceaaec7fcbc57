/**
 * delivery_unconfirmed from a real harness (issue 12, item 3: "once a launch may have
 * happened, a lost answer is start_unconfirmed or delivery_unconfirmed, and is never a
 * second launch"; rule 52, scenario 27): the real Pi TUI is hired in real tmux and the
 * brief's native write happens, but its answer is lost (the agent's drop_brief_answer fault
 * point, node-agent/hire/faults.ts, as a native link cut after Pi took the text would).
 * The lead gets delivery_unconfirmed naming the seat; a replay starts no second pane,
 * process or brief; reconcile finds the seat from the host journal; the owner's
 * not-launched is refused by the census; the brief reached the model at most once.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { runCli } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { piHireEnv, type HireEnv } from "./kit/hire-envs.js";

const bin = requireHarness("pi");
const META = "clankie/seat-call";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(bin)("hire_agent: the brief's native answer is lost after Pi took it", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  const hireId = randomUUID();
  const marker = `unconf-${hireId.slice(0, 8)}`;
  let args: Record<string, unknown>;
  let seat = "";
  let roots: number[] = [];

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(bin!, mock.url);
    fleet = await startHireFleet("pglite", { hire: { ...env.hire, fault: "drop_brief_answer" } });
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

  it("the lead gets delivery_unconfirmed with the seat, uncertain in _meta; the pane is the hire's one pane", async () => {
    const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(res.isError).toBe(true);
    const body = res.structuredContent as Record<string, unknown>;
    expect(body, JSON.stringify(body)).toMatchObject({
      outcome: "failed",
      reason: "delivery_unconfirmed",
      hireId,
      deliveryStage: "uncertain",
      reconcileTool: "reconcile_seat_call",
      launchCommitted: true,
      brief: { mechanism: "unconfirmed" },
    });
    expect(body.control).toEqual({
      reason: "delivery_unconfirmed",
      fix: expect.stringMatching(new RegExp(`clankie hire-receipt settle ${hireId} abandoned-unknown`)),
    });
    expect(body.detail).toMatch(/drop_brief_answer/);
    expect(body.detail).toMatch(/never be written again/);
    seat = body.seat as string;
    expect(seat).toMatch(/^testbox\/pi-/);
    expect(res._meta?.[META]).toMatchObject({ id: hireId, state: "uncertain", hireId });
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    roots = fleet.launchedRoots(hireId);
    expect(roots.length).toBeGreaterThan(0);
    // The write did happen: the brief reached the model, once.
    await mock.waitForRequest(marker, 60_000);
    expect(mock.userMessagesContaining(marker)).toBe(1);
  });

  it("a replay of the hireId returns the uncertainty and starts nothing: no second pane, process or brief", async () => {
    const again = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent, JSON.stringify(again.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "delivery_unconfirmed",
      hireId,
    });
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
    await sleep(1000);
    expect(mock.userMessagesContaining(marker)).toBe(1);
  });

  it("reconcile_seat_call finds the seat from the host journal, still delivery_unconfirmed, and launches nothing", async () => {
    const rec = await fleet.lead.call("reconcile_seat_call", { hireId });
    expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "delivery_unconfirmed",
      hireId,
      seat,
      recoveredFrom: "host_journal",
    });
    expect(rec._meta?.[META]).toMatchObject({ state: "uncertain" });
    const list = await runCli(["hire-receipt", "list", "--json", "--state-dir", fleet.stateDir]);
    expect(list.code, list.stderr).toBe(0);
    const rows = (JSON.parse(list.stdout) as { unresolved: { id: string; state: string }[] }).unresolved;
    expect(rows.find((r) => r.id === hireId)).toMatchObject({ state: "delivery_unconfirmed" });
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
  });

  it("the owner's not-launched is refused (the census finds the pane and process); abandoned-unknown keeps the evidence; the id stays refused", async () => {
    const refused = await runCli([
      "hire-receipt",
      "settle",
      hireId,
      "not-launched",
      "--json",
      "--state-dir",
      fleet.stateDir,
    ]);
    expect(refused.code).toBe(1);
    const r = JSON.parse(refused.stdout) as { state: string; detail: string };
    expect(r.state).toBe("refused");
    expect(r.detail).toMatch(/does not prove/);
    expect(r.detail).toMatch(/processes \d+/);
    const settled = await runCli([
      "hire-receipt",
      "settle",
      hireId,
      "abandoned-unknown",
      "--json",
      "--state-dir",
      fleet.stateDir,
    ]);
    expect(settled.code, settled.stdout + settled.stderr).toBe(0);
    const again = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent).toMatchObject({ reason: "abandoned_unknown", hireId });
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
    expect(mock.userMessagesContaining(marker)).toBe(1);
  });
});
