/**
 * A successful hire through Herdr (issue 12, item 2: "Herdr's `agent start` through its
 * client, tested against the fake Herdr"; rule 52): the agent's pane host is Herdr, here the
 * fake that follows Herdr's socket schema, whose panes are real terminals
 * (test/kit/fake-herdr-terminals.ts: a private tmux server stands in for Herdr's PTY) and
 * whose agent.start runs the kind's binary from the owner's Herdr integration. The hire
 * opens one pane with pane.split, tags it, starts the real Pi TUI with agent.start, waits
 * for the seat, and delivers the brief through the Clankie extension (never typed): it
 * reaches the model exactly once. A replay of the hireId opens no second pane and starts
 * no second process; message_seat then reaches the hired seat. With the answer lost after
 * the pane opened (the controller's drop_hire_answer), the census finds the Herdr pane and
 * its processes (by HERDR_PANE_ID: agent.start carries no hire marker), so the owner's
 * not-launched is refused, and reconcile finds the seat.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startFakeHerdr, type FakeHerdr } from "../kit/fake-herdr.js";
import { startHerdrTerminals, type HerdrTerminals } from "../kit/fake-herdr-terminals.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { runCli } from "../kit/cli.js";
import { TYPING_METHODS } from "../../node-agent/panes/herdr-client.js";
import { allPids, isFailure, readEnviron } from "../../node-agent/proofs/linux-read.js";
import { requireHarness } from "./kit/harness-bin.js";
import { piHireEnv, type HireEnv } from "./kit/hire-envs.js";

const bin = requireHarness("pi");
const META = "clankie/seat-call";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Processes in a Herdr pane: Herdr gives each the pane's HERDR_PANE_ID and socket. */
function paneProcesses(paneId: string, socket: string): number[] {
  return allPids().filter((pid) => {
    const env = readEnviron(pid);
    return !isFailure(env) && env.get("HERDR_PANE_ID") === paneId && env.get("HERDR_SOCKET_PATH") === socket;
  });
}

describe.runIf(bin)("hire_agent through Herdr's agent.start: a real Pi in a real pane of the fake Herdr", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let terminals: HerdrTerminals;
  let herdr: FakeHerdr;
  let fleet: HireFleet;
  const hireId = randomUUID();
  const marker = `herdr-${hireId.slice(0, 8)}`;
  let args: Record<string, unknown>;
  let seat = "";
  let paneId = "";

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(bin!, mock.url);
    terminals = startHerdrTerminals();
    herdr = await startFakeHerdr({ terminals });
    fleet = await startHireFleet("pglite", { herdrSocket: herdr.socketPath, hire: env.hire });
    // The owner's Herdr Pi integration: Pi with its homes and the agent's Pi socket folder.
    herdr.integrate("pi", {
      bin: bin!,
      env: { ...env.hire.env!, CLANKIE_PI_SOCKET_DIR: join(fleet.agentStateDir, "pi", "sockets") },
    });
    args = {
      harness: "pi",
      workingDirectory: env.work,
      title: "pi worker",
      role: "tester",
      brief: `${marker}: say hello`,
      model: env.model,
    };
  });
  afterAll(async () => {
    await fleet?.close();
    await herdr?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });

  it("spawns Pi with pane.split + agent.start, and the brief goes in natively and reaches the model exactly once", async () => {
    const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    const body = res.structuredContent as Record<string, unknown>;
    expect(body, JSON.stringify(body)).toMatchObject({
      outcome: "spawned",
      hireId,
      machine: "testbox",
      harness: "pi",
      launchCommitted: true,
      brief: { mechanism: "delivered" },
    });
    paneId = body.paneId as string;
    seat = body.seat as string;
    expect(seat).toBe(`testbox/pi-${paneId.replace(/[^A-Za-z0-9._-]/g, "-")}`);
    expect((body.proofs as { kind: string; outcome: string }[]).find((p) => p.kind === "pi_control")).toMatchObject({
      outcome: "proven",
    });
    // Herdr's calls, in order: one pane, tagged, the agent started in it; nothing typed.
    const hireCalls = herdr.calls.filter((c) =>
      ["pane.split", "pane.report_metadata", "agent.start", "pane.close"].includes(c.method),
    );
    expect(hireCalls.map((c) => c.method)).toEqual(["pane.split", "pane.report_metadata", "agent.start"]);
    expect(hireCalls[0]!.params).toMatchObject({ cwd: env.work, focus: false });
    expect(hireCalls[1]!.params).toMatchObject({ pane_id: paneId, tokens: { clankie_hire: hireId } });
    expect(hireCalls[2]!.params).toMatchObject({
      kind: "pi",
      pane_id: paneId,
      timeout_ms: 30_000,
      args: expect.arrayContaining(["-e", "--model", env.model]),
    });
    expect(herdr.calls.filter((c) => TYPING_METHODS.includes(c.method))).toEqual([]);
    // A real Pi runs in the pane's real terminal, in the working directory.
    const info = await terminals.processInfo(paneId);
    expect(info!.foreground_processes.some((p) => p.argv.slice(0, 2).some((a) => /(^|\/)pi$/.test(a)))).toBe(true);
    expect(paneProcesses(paneId, herdr.socketPath).length).toBeGreaterThan(0);
    await mock.waitForRequest(marker, 60_000);
    expect(mock.userMessagesContaining(marker)).toBe(1);
  });

  it("the same hireId again returns the original result: no second pane.split or agent.start, no second process", async () => {
    const before = paneProcesses(paneId, herdr.socketPath);
    const first = await fleet.lead.call("reconcile_seat_call", { hireId });
    const again = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(herdr.calls.filter((c) => c.method === "pane.split")).toHaveLength(1);
    expect(herdr.calls.filter((c) => c.method === "agent.start")).toHaveLength(1);
    expect(terminals.backing().size).toBe(1);
    expect(paneProcesses(paneId, herdr.socketPath)).toEqual(before);
    await sleep(500);
    expect(mock.userMessagesContaining(marker)).toBe(1);
  });

  it("list_seats shows the hired Herdr seat with its hiring conversation; a message_seat to it arrives", async () => {
    const seats = (await fleet.lead.call("list_seats", {})).structuredContent?.seats as {
      id: string;
      hiredBy?: unknown;
    }[];
    expect(seats.find((x) => x.id === seat)?.hiredBy).toEqual({ conversationId: "global-default", hireId });
    const text = `followup-${hireId.slice(0, 8)}`;
    let res;
    for (let i = 0; i < 60; i++) {
      res = await fleet.lead.call("message_seat", { seat, message: text });
      if ((res.structuredContent as { outcome?: string }).outcome === "delivered") break;
      await sleep(500);
    }
    expect(res!.structuredContent, JSON.stringify(res!.structuredContent)).toMatchObject({ outcome: "delivered" });
    await mock.waitForRequest(text, 60_000);
    expect(mock.userMessagesContaining(text)).toBe(1);
    expect(herdr.calls.filter((c) => TYPING_METHODS.includes(c.method))).toEqual([]);
  });
});

describe.runIf(bin)("hire_agent through Herdr: the answer is lost after the pane opened", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let herdr: FakeHerdr;
  let fleet: HireFleet;
  const hireId = randomUUID();
  const marker = `herdr-lost-${hireId.slice(0, 8)}`;

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    env = piHireEnv(bin!, mock.url);
    herdr = await startFakeHerdr({ terminals: startHerdrTerminals() });
    fleet = await startHireFleet("pglite", {
      herdrSocket: herdr.socketPath,
      hire: env.hire,
      controller: { fault: "drop_hire_answer" },
    });
    herdr.integrate("pi", {
      bin: bin!,
      env: { ...env.hire.env!, CLANKIE_PI_SOCKET_DIR: join(fleet.agentStateDir, "pi", "sockets") },
    });
  });
  afterAll(async () => {
    await fleet?.close();
    await herdr?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true });
  });

  it("start_unconfirmed; the census finds the Herdr pane and its processes, so not-launched is refused; reconcile finds the seat; nothing launches twice", async () => {
    const args = {
      harness: "pi",
      workingDirectory: env.work,
      title: "pi worker",
      role: "tester",
      brief: `${marker}: go`,
      model: env.model,
    };
    const res = await fleet.lead.call("hire_agent", args, { [META]: { hireId } });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
      outcome: "failed",
      reason: "start_unconfirmed",
      hireId,
      launchCommitted: true,
    });
    const split = herdr.calls.filter((c) => c.method === "pane.split");
    expect(split).toHaveLength(1);
    // The owner's not-launched: the sealing census sees the pane and the processes in it.
    const settle = await runCli([
      "hire-receipt",
      "settle",
      hireId,
      "not-launched",
      "--json",
      "--state-dir",
      fleet.stateDir,
    ]);
    expect(settle.code, settle.stdout + settle.stderr).toBe(1);
    const refused = JSON.parse(settle.stdout) as { state: string; detail: string };
    expect(refused.state).toBe("refused");
    expect(refused.detail).toMatch(/does not prove/);
    expect(refused.detail).toMatch(/panes w1:p\d+/);
    expect(refused.detail).toMatch(/processes \d+/);
    let rec;
    for (let i = 0; i < 120; i++) {
      rec = await fleet.lead.call("reconcile_seat_call", { hireId });
      if ((rec._meta?.[META] as { state?: string } | undefined)?.state === "settled") break;
      await sleep(500);
    }
    expect(rec!.structuredContent, JSON.stringify(rec!.structuredContent)).toMatchObject({
      outcome: "spawned",
      hireId,
      recoveredFrom: "host_journal",
    });
    const paneId = rec!.structuredContent!.paneId as string;
    const inPane = paneProcesses(paneId, herdr.socketPath);
    expect(inPane.length).toBeGreaterThan(0);
    // What the census named is what runs in that pane.
    for (const pid of /processes ([\d, ]+)/.exec(refused.detail)![1]!.split(", ").map(Number))
      expect(inPane).toContain(pid);
    await mock.waitForRequest(marker, 60_000);
    expect(mock.userMessagesContaining(marker)).toBe(1);
    expect(herdr.calls.filter((c) => c.method === "agent.start")).toHaveLength(1);
    expect(herdr.calls.filter((c) => TYPING_METHODS.includes(c.method))).toEqual([]);
  });
});
