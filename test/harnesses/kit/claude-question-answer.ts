/**
 * Rule 35 for a hired Claude Code, shared by the launcher-hook and the plugin-hook suites: the
 * brief turn's AskUserQuestion is filed for the hiring conversation only, the hiring lead answers
 * it with message_seat{questionAnswer}, and the model is given exactly that answer (the hook's
 * JSON), once.
 */
import { expect } from "vitest";
import type { MockAnthropicServer } from "../../fixtures/mock-anthropic-server.js";
import type { LeadClient } from "../../kit/mcp-client.js";
import { until } from "../../kit/until.js";
import { reportsOf } from "../../kit/worker-reports.js";

export async function expectQuestionAnsweredByHiringLead(o: {
  hiring: LeadClient;
  others: LeadClient[];
  seat: string;
  mock: MockAnthropicServer;
  question: string;
}): Promise<void> {
  const report = await until(
    async () => (await reportsOf(o.hiring)).find((x) => x.text.startsWith(`Question from seat ${o.seat}`)),
    "the hired seat's question to reach the hiring lead",
    900,
  );
  expect(report.text).toContain(o.question);
  for (const lead of o.others)
    expect((await reportsOf(lead)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
  const requestId = /requestId ([^;]+);/.exec(report.text)![1]!;
  const answered = await o.hiring.call("message_seat", {
    seat: o.seat,
    questionAnswer: { requestId, answers: { q1: { answers: ["SQLite"] } } },
  });
  expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
    outcome: "delivered",
    requestId,
    deliveryId: expect.any(String),
    nativeReceiptId: expect.stringContaining(`/${requestId}`),
  });
  const told = `Your questions have been answered: "${o.question}"="SQLite". You can now continue with these answers in mind.`;
  await until(
    () => o.mock.requests.some((r) => r.turnToolResults.includes(told)),
    "the model to be given the lead's answer",
    900,
  );
  expect([...new Set(o.mock.requests.flatMap((r) => r.turnToolResults).filter((t) => t.includes(o.question)))]).toEqual(
    [told],
  );
}
