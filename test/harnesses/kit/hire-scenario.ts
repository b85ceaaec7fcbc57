/**
 * The hire_agent scenario every real harness runs (test/harnesses/hire-*.test.ts): hire,
 * the brief reaches the model exactly once, a replay of the hireId opens no second pane
 * and starts no second process, list_seats shows the hired seat with its hiring
 * conversation and input capabilities, a worker report from it goes to the hiring
 * conversation (not global-default), and a message_seat to it arrives.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { join } from "node:path";
import { startHireFleet, type HireFleet } from "../../kit/hire-fleet.js";
import type { LeadClient } from "../../kit/mcp-client.js";
import { Outbox } from "../../../node-agent/mailbox/outbox.js";
import type { HireEnv } from "./hire-envs.js";

const META = "clankie/seat-call";

export interface HireScenario {
  harness: "codex" | "claude" | "opencode" | "pi";
  env: () => HireEnv;
  /** How many user messages carrying the marker reached the model, at most in one request. */
  reached: (marker: string) => number;
  waitForModel: (marker: string) => Promise<void>;
  /** What the hired (owned) seat must advertise, when the harness's rule fixes it (Codex, rules 36 and 47). */
  capabilities?: { deliveryModes: string[]; interrupt: boolean; nextTurnOnly: boolean } | undefined;
  /** Plays the owner while the hire waits (e.g. Claude's development-channel confirmation). */
  owner?: (fleet: HireFleet) => () => void;
}

export function hireScenario(s: HireScenario): void {
  let fleet: HireFleet;
  let stopOwner: (() => void) | undefined;
  const hireId = randomUUID();
  const marker = `brief-${hireId.slice(0, 8)}`;
  let args: Record<string, unknown>;
  let seat: string;
  let hiring: LeadClient;

  beforeAll(async () => {
    const env = s.env();
    fleet = await startHireFleet("pglite", { hire: env.hire });
    stopOwner = s.owner?.(fleet);
    hiring = await fleet.leadFor("hiring-lead");
    args = {
      harness: s.harness,
      workingDirectory: env.work,
      title: `${s.harness} worker`,
      role: "test worker",
      brief: `${marker}: say hello`,
      ...(env.model ? { model: env.model } : {}),
    };
  });
  afterAll(async () => {
    stopOwner?.();
    await fleet?.close();
  });

  it(`hire_agent spawns ${s.harness} in one new pane and delivers the brief natively, exactly once`, async () => {
    const res = await hiring.call("hire_agent", args, { [META]: { hireId } });
    const body = res.structuredContent as Record<string, unknown>;
    expect(body, JSON.stringify(body)).toMatchObject({
      outcome: "spawned",
      hireId,
      machine: "testbox",
      harness: s.harness,
      launchCommitted: true,
    });
    expect(res._meta?.[META]).toEqual({ id: hireId, tool: "hire_agent", state: "settled", hireId });
    seat = body.seat as string;
    expect(seat).toMatch(new RegExp(`^testbox/${s.harness}-`));
    expect(["delivered", "started", "queued"]).toContain((body.brief as { mechanism: string }).mechanism);
    expect((body.proofs as unknown[]).length).toBeGreaterThan(0);
    const panes = fleet.panes().filter((p) => p.hire === hireId);
    expect(panes).toHaveLength(1);
    expect(panes[0]!.paneId).toBe(body.paneId);
    await s.waitForModel(marker);
    expect(s.reached(marker)).toBe(1);
  });

  it("the same hireId again returns the original result: no second pane, no second process", async () => {
    const roots = fleet.launchedRoots(hireId);
    expect(roots.length).toBeGreaterThan(0);
    const first = await hiring.call("reconcile_seat_call", { hireId });
    const again = await hiring.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
    expect(s.reached(marker)).toBe(1);
  });

  it("list_seats shows the hired seat with its hiring conversation and input capabilities", async () => {
    const seats = (await hiring.call("list_seats", {})).structuredContent?.seats as {
      id: string;
      hiredBy?: unknown;
      inputCapabilities: unknown;
    }[];
    const row = seats.find((x) => x.id === seat);
    expect(row, JSON.stringify(seats)).toBeDefined();
    expect(row!.hiredBy).toEqual({ conversationId: "hiring-lead", hireId });
    expect(row!.inputCapabilities).toMatchObject({
      deliveryModes: expect.any(Array),
      interrupt: expect.any(Boolean),
      nextTurnOnly: expect.any(Boolean),
    });
    if (s.capabilities) expect(row!.inputCapabilities).toEqual(s.capabilities);
  });

  it("a worker report from the hired seat goes to the hiring conversation, never global-default", async () => {
    const text = `report-${hireId.slice(0, 8)}`;
    // As the worker's message_clankie does: into the agent's outbox, forwarded to the controller.
    new Outbox(join(fleet.agentStateDir, "outbox")).put(seat.split("/")[1]!, text);
    let reports: { seat: string; text: string; unadopted: boolean }[] = [];
    for (let i = 0; i < 100 && !reports.some((r) => r.text === text); i++) {
      reports = ((await hiring.call("worker_reports", {})).structuredContent?.reports ?? []) as typeof reports;
      if (!reports.some((r) => r.text === text)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(reports.find((r) => r.text === text)).toMatchObject({ seat, unadopted: false });
    const elsewhere = ((await fleet.lead.call("worker_reports", {})).structuredContent?.reports ??
      []) as typeof reports;
    expect(elsewhere.some((r) => r.text === text)).toBe(false);
  });

  it("a message_seat to the hired seat arrives at the model", async () => {
    const text = `followup-${hireId.slice(0, 8)}`;
    let res;
    // The brief's turn may still be running: the seat takes the message then (queued) or after.
    for (let i = 0; i < 60; i++) {
      res = await hiring.call("message_seat", { seat, message: text });
      if ((res.structuredContent as { outcome?: string }).outcome === "delivered") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(res!.structuredContent, JSON.stringify(res!.structuredContent)).toMatchObject({ outcome: "delivered" });
    await s.waitForModel(text);
    expect(s.reached(text)).toBe(1);
  });
}
