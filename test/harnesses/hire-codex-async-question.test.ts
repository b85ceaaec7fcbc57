/**
 * Codex's async question and its reply (issue 13 part 4, rule 39; ADR 0050 addendum "Async
 * questions"), with a hired real Codex in real tmux on its private app-server. The owner's
 * config.toml turns on `send_message_to_user_async`; the mock model calls it. The question (an
 * `agentMessage` with `delivery: "async"`) reaches the hiring lead only, whose
 * message_seat{questionAnswer} is written as a native user message on the seat's thread and is
 * `delivered` with the user message carrying exactly our client id and content in the turn it
 * returned; the model gets that reply once; a second answer is refused. When someone else
 * (another client of the same app-server, as the owner would) answered first, the lead's answer
 * is `unconfirmed` / `answered_concurrently_by_owner` and is never sent. An answer lost on its
 * way back (the controller's drop point) is `uncertain`; reconcile_seat_call asks the agent's
 * reconcile_only, which re-reads the thread for the reply's client id and settles it delivered.
 */
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { workerCallFaults } from "../kit/worker-call-faults.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { assertBuilt } from "../kit/cli.js";
import { CodexConnection } from "../../node-agent/harnesses/codex/connection.js";
import { requireHarness } from "./kit/harness-bin.js";
import { codexHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";
import { reportsOf } from "../kit/worker-reports.js";
import { until } from "../kit/until.js";

const bin = requireHarness("codex");
const META = "clankie/seat-call";
const ASYNC = "[async] ";
const faults = workerCallFaults();

describe("a hired Codex's async question is answered by its hiring lead with a native user message", () => {
  let mock: MockResponsesServer;
  let env: HireEnv;
  let fleet: HireFleet;
  let hiring: LeadClient;
  let other: LeadClient;
  let seat: string;
  let socket: string;
  const hireId = randomUUID();
  /** The lead asks the seat; the model asks back asynchronously; resolves with the filed question's requestId. */
  const askAsync = async (tag: string) => {
    const sent = await hiring.call("message_seat", { seat, message: ASYNC + tag });
    expect(sent.structuredContent, JSON.stringify(sent.structuredContent)).toMatchObject({ outcome: "delivered" });
    const report = await until(
      async () => (await reportsOf(hiring)).find((x) => x.text.includes(`Which colour for ${tag}?`)),
      `the async question ${tag} to reach the hiring lead`,
    );
    expect((await reportsOf(other)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
    return /requestId ([^;]+);/.exec(report.text)![1]!;
  };

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    assertBuilt();
    mock = await startMockResponsesServer({
      reply: "ok",
      toolCall: (r) =>
        r.lastUserText.startsWith(ASYNC) && r.toolNames.includes("send_message_to_user_async")
          ? {
              name: "send_message_to_user_async",
              arguments: { message: `Which colour for ${r.lastUserText.slice(ASYNC.length)}?` },
            }
          : undefined,
    });
    env = codexHireEnv(bin, mock.baseUrl);
    // The owner's decision, in the owner's config: the hire's app-server reads it too.
    appendFileSync(join(env.hire.env!.CODEX_HOME!, "config.toml"), "\n[features]\nsend_message_to_user_async = true\n");
    fleet = await startHireFleet("pglite", { hire: env.hire, hooks: { faults } });
    hiring = await fleet.leadFor("hiring-lead");
    other = await fleet.leadFor("other-lead");
    const res = await hiring.call(
      "hire_agent",
      { harness: "codex", workingDirectory: env.work, title: "codex asker", role: "asker", brief: "hello" },
      { [META]: { hireId } },
    );
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "spawned" });
    seat = res.structuredContent!.seat as string;
    socket = join(fleet.agentStateDir, "hires", hireId.toLowerCase(), "codex.sock");
    await mock.waitFor((r) => r.lastUserText.includes("hello"));
    await until(
      () => fleet.agent.watchingQuestions(seat.split("/")[1]!),
      "the agent's question desk to watch the hired seat's thread",
      300,
    );
  });
  afterAll(async () => {
    await fleet?.close();
    if (env)
      cleanupCodexEnv(bin!, {
        root: env.root,
        home: env.hire.env!.HOME!,
        codexHome: env.hire.env!.CODEX_HOME!,
        workDir: env.work,
        env: { ...env.hire.env },
      });
    await mock?.close();
  });

  it("rule 39, async: the lead's answer is a user message with our exact client id and content; delivered with that receipt; the model gets it once; a second answer is refused", async () => {
    const requestId = await askAsync("the door");
    const reply = `Blue-${hireId.slice(0, 6)}`;
    const answered = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { reply: { answers: [reply] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      nativeReceiptId: expect.any(String),
    });
    expect(String(answered.structuredContent!.detail)).toMatch(
      /the async reply: user message .* carries this answer under client id/,
    );
    await mock.waitFor((q) => q.lastUserText === reply);
    expect(mock.countRequestsWith(reply, "last")).toBe(1);
    expect(mock.maxCopiesInOneRequest(reply)).toBe(1);
    const again = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { reply: { answers: ["Red"] } } },
    });
    expect(again.structuredContent).toMatchObject({ outcome: "refused", reason: "already_answered" });
  });

  it("rule 39, async: someone else's user message after the question comes first: the lead's answer is unconfirmed / answered_concurrently_by_owner and never sent", async () => {
    const requestId = await askAsync("the wall");
    const opened = await CodexConnection.open(socket);
    if (!opened.ok) throw new Error(opened.message);
    try {
      const threads = await opened.connection.call<{ data: string[] }>("thread/loaded/list", {});
      const threadId = (threads as { ok: true; result: { data: string[] } }).result.data[0]!;
      // Wait for the asking turn to end, then the owner answers in the thread.
      await until(async () => {
        const r = await opened.connection.call<{ thread: { status: { type: string } } }>("thread/read", { threadId });
        return r.ok && r.result.thread.status.type === "idle";
      }, "the asking turn to end");
      const owner = await opened.connection.call("turn/start", {
        threadId,
        input: [{ type: "text", text: "owner says red", text_elements: [] }],
      });
      expect(owner.ok, JSON.stringify(owner)).toBe(true);
      await mock.waitFor((q) => q.lastUserText === "owner says red");
    } finally {
      opened.connection.close();
    }
    const lead = `Green-${hireId.slice(0, 6)}`;
    const answered = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { reply: { answers: [lead] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "unconfirmed",
      reason: "answered_concurrently_by_owner",
    });
    expect(String(answered.structuredContent!.detail)).toMatch(/was not sent/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(mock.countRequestsWith(lead, "any")).toBe(0);
  });

  it("rule 39 / VUH-1638, async: the agent's answer lost on its way back is uncertain; reconcile_seat_call re-reads the thread for the reply's client id and settles it delivered; nothing is resent", async () => {
    const requestId = await askAsync("the roof");
    const reply = `Gold-${hireId.slice(0, 6)}`;
    const dropped = faults.armDrop("drop_question_answer");
    const id = randomUUID();
    const lost = await hiring.call(
      "message_seat",
      { seat, questionAnswer: { requestId, answers: { reply: { answers: [reply] } } } },
      { [META]: { deliveryId: id } },
    );
    await dropped;
    expect(lost.structuredContent, JSON.stringify(lost.structuredContent)).toMatchObject({
      outcome: "uncertain",
      deliveryId: id,
    });
    await mock.waitFor((q) => q.lastUserText === reply);
    const rec = await hiring.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      deliveryId: id,
      nativeReceiptId: expect.any(String),
    });
    expect(String(rec.structuredContent!.detail)).toMatch(
      /the async reply: user message .* carries this answer under client id/,
    );
    expect(mock.countRequestsWith(reply, "last")).toBe(1);
  });
});
