/**
 * The hired-worker-reports scenario (issue 12 item 5, issue 13 part 2, rule 48) shared by the
 * Codex, Claude and OpenCode suites: hire the real harness with a brief asking it to report;
 * the mock model answers the brief turn with a message_clankie tool call; the worker MCP server
 * the launcher gave the hired seat stores the report for the hiring conversation only.
 */
import { expect } from "vitest";
import { startHireFleet, type HireFleet } from "../../kit/hire-fleet.js";
import type { LeadClient } from "../../kit/mcp-client.js";
import type { HireEnv } from "./hire-envs.js";
import { ASK } from "./worker-report-fleet.js";
import { reportsOf } from "../../kit/worker-reports.js";

export interface HiredReporter {
  fleet: HireFleet;
  hiring: LeadClient;
  other: LeadClient;
  seat: string;
  close(): Promise<void>;
}

/** Hires HARNESS from conversation "hiring-lead" with a brief asking it to report TEXT. */
export async function hireReporter(
  harness: "codex" | "claude" | "opencode",
  env: HireEnv,
  text: string,
  owner?: (fleet: HireFleet) => () => void,
): Promise<HiredReporter> {
  const fleet = await startHireFleet("pglite", { hire: env.hire });
  const stopOwner = owner?.(fleet);
  const hiring = await fleet.leadFor("hiring-lead");
  const other = await fleet.leadFor("other-lead");
  const res = await hiring.call("hire_agent", {
    harness,
    workingDirectory: env.work,
    title: `${harness} reporter`,
    role: "reporter",
    brief: ASK + text,
    ...(env.model ? { model: env.model } : {}),
  });
  if (res.structuredContent?.outcome !== "spawned") {
    stopOwner?.();
    await fleet.close();
  }
  expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "spawned" });
  return {
    fleet,
    hiring,
    other,
    seat: res.structuredContent!.seat as string,
    async close() {
      stopOwner?.();
      await fleet.close();
    },
  };
}

/** The tool's answer says stored; the hiring lead reads the report once, under SEAT; the other conversations (global-default, another lead) do not. */
export async function expectReportOnlyFor(
  to: { hiring: LeadClient; others: LeadClient[]; seat: string },
  text: string,
  answer: Record<string, unknown>,
): Promise<void> {
  expect(answer, JSON.stringify(answer)).toMatchObject({
    received: true,
    deliveryStage: "stored",
    deliveryId: expect.any(String),
  });
  expect((await reportsOf(to.hiring)).filter((r) => r.text === text)).toEqual([
    expect.objectContaining({ deliveryId: answer.deliveryId, seat: to.seat, unadopted: false }),
  ]);
  for (const lead of to.others) expect((await reportsOf(lead)).some((r) => r.text === text)).toBe(false);
}

/** As expectReportOnlyFor, for a hireReporter scenario; the answer also names its binding. */
export async function expectReportOnlyForHiring(
  h: HiredReporter,
  text: string,
  answer: Record<string, unknown>,
): Promise<void> {
  expect(answer).toMatchObject({ binding: expect.any(String) });
  await expectReportOnlyFor({ hiring: h.hiring, others: [h.fleet.lead, h.other], seat: h.seat }, text, answer);
}

/** The TEXT a user message asks to report (the brief arrives as "[role: …]\nreport back: TEXT"). */
export function askedIn(userText: string): string | undefined {
  return userText
    .split("\n")
    .find((l) => l.startsWith(ASK))
    ?.slice(ASK.length);
}
