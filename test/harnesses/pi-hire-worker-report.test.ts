/**
 * A hired Pi answers back (rule 48, scenario 22; issue 13 part 2): hire_agent launches the real
 * Pi in a new tmux pane with the Clankie extension and the worker tools extension; the hiring
 * lead messages the seat, the mock model answers with a message_clankie tool call, and the
 * report is stored for the hiring conversation: the hiring lead reads it, global-default does not.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { requireHarness } from "./kit/harness-bin.js";
import { piHireEnv } from "./kit/hire-envs.js";
import { ASK, reportToolUse } from "./kit/worker-report-fleet.js";

const bin = requireHarness("pi");

describe("a hired Pi reports to its hiring lead with message_clankie", () => {
  let mock: MockAnthropicServer;
  let fleet: HireFleet;
  let hiring: LeadClient;
  let seat = "";

  beforeAll(async () => {
    if (!bin) throw new Error("pi is not installed in .harnesses/pi: run `npm run harnesses:install -- pi`");
    mock = await startMockAnthropicServer({ toolUse: reportToolUse });
    const env = piHireEnv(bin, mock.url);
    fleet = await startHireFleet("pglite", { hire: env.hire });
    hiring = await fleet.leadFor("hiring-lead");
    const res = await hiring.call("hire_agent", {
      harness: "pi",
      workingDirectory: env.work,
      title: "pi worker",
      role: "reporter",
      brief: "wait for your lead",
      model: env.model,
    });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "spawned" });
    seat = res.structuredContent!.seat as string;
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    await mock?.close();
  });

  it("rule 48: the hired Pi's report is stored under its binding for the hiring conversation only", async () => {
    const text = "hired pi report: done";
    const before = new Set(mock.requests);
    let sent = await hiring.call("message_seat", { seat, message: ASK + text });
    // The brief's turn may still run, or a proof be refused under load (both definite not-sent): send again.
    for (let i = 0; i < 60 && sent.structuredContent?.outcome === "undelivered"; i++) {
      await new Promise((r) => setTimeout(r, 500));
      sent = await hiring.call("message_seat", { seat, message: ASK + text });
    }
    expect(sent.structuredContent, JSON.stringify(sent.structuredContent)).toMatchObject({ outcome: "delivered" });
    let answer: Record<string, unknown> | undefined;
    for (let i = 0; i < 600 && !answer; i++) {
      const r = mock.requests.find(
        (x) => !before.has(x) && x.latestUserText.includes(ASK + text) && x.turnToolResults.length > 0,
      );
      if (r) answer = JSON.parse(r.turnToolResults.at(-1)!.match(/\{.*\}/s)?.[0] ?? "{}") as Record<string, unknown>;
      else await new Promise((res) => setTimeout(res, 100));
    }
    expect(answer).toMatchObject({ received: true, deliveryStage: "stored", deliveryId: expect.any(String) });
    const reports = ((await hiring.call("worker_reports", {})).structuredContent?.reports ?? []) as {
      deliveryId: string;
      seat: string;
      text: string;
      unadopted: boolean;
    }[];
    expect(reports.filter((r) => r.text === text)).toEqual([
      expect.objectContaining({ deliveryId: answer!.deliveryId, seat, unadopted: false }),
    ]);
    const elsewhere = ((await fleet.lead.call("worker_reports", {})).structuredContent?.reports ?? []) as {
      text: string;
    }[];
    expect(elsewhere.some((r) => r.text === text)).toBe(false);
  });
});
