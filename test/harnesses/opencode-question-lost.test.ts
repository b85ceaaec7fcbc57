/**
 * A lost answer to an OpenCode question (issue 13 part 4, rule 39) on the real pinned OpenCode:
 * the watcher reads a real `opencode serve` through a relay that loses the answer to our
 * `POST /question/{id}/reply` after OpenCode took it. The answer is then `uncertain` and fenced:
 * a second answer is refused and never sent, and the model got the first exactly once;
 * reconcile_only re-reads the question's tool part and settles it `delivered`, sending nothing.
 * A question never answered reconciles to an exact not-sent (no claim). A permission prompt
 * (a bash call under `permission.bash: "ask"`) is the owner's: it never surfaces as a question.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SeatKind } from "../../shared/verdicts.js";
import type { SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { OpenCodeQuestionWatcher } from "../../node-agent/harnesses/opencode/questions.js";
import type { WorkerQuestion } from "../../node-agent/harnesses/codex/question-types.js";
import { QuestionLedger } from "../../node-agent/questions/question-ledger.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startHttpLossyProxy, type HttpLossyProxy } from "./kit/http-lossy-proxy.js";
import { startOpenCodeServer, type OpenCodeServer } from "./kit/opencode-server.js";

const bin = requireHarness("opencode");
const QUESTION = {
  question: "Which queue should the service use?",
  header: "Queue",
  options: [
    { label: "Redis", description: "shared" },
    { label: "None", description: "in process" },
  ],
};
const told = (answer: string) =>
  `User has answered your questions: "${QUESTION.question}"="${answer}". You can now continue with the user's answers in mind.`;

async function until<T>(probe: () => T | undefined, what: string, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

describe("an OpenCode question's lost answer is uncertain, fenced, and settled by reconcile from the tool part", () => {
  let mock: MockAnthropicServer;
  let oc: OpenCodeServer;
  let proxy: HttpLossyProxy;
  let watcher: OpenCodeQuestionWatcher;
  let sessionId: string;
  const asked: WorkerQuestion[] = [];
  const headers = () => ({
    authorization: `Basic ${Buffer.from(`opencode:${oc.password}`).toString("base64")}`,
    "content-type": "application/json",
  });
  const ask = (text: string) =>
    fetch(`${oc.url}/session/${sessionId}/prompt_async`, {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({ parts: [{ type: "text", text }] }),
    });
  const results = () => mock.requests.flatMap((r) => r.turnToolResults).filter((t) => t.includes(QUESTION.question));

  beforeAll(async () => {
    if (!bin)
      throw new Error("opencode is not installed in .harnesses/opencode: run `npm run harnesses:install -- opencode`");
    mock = await startMockAnthropicServer({
      toolUse: (r) =>
        r.latestUserText.includes("[ask]") && r.toolNames.includes("question")
          ? { name: "question", input: { questions: [QUESTION] } }
          : r.latestUserText.includes("[perm]") && r.toolNames.includes("bash")
            ? { name: "bash", input: { command: "echo permission-probe", description: "Echo a probe" } }
            : undefined,
    });
    oc = await startOpenCodeServer(bin, mock.url, { permission: { bash: "ask" } });
    sessionId = await oc.createSession();
    proxy = await startHttpLossyProxy(oc.url);
    const seat: SeatRecord = {
      name: "oc-asker",
      kind: SeatKind.OpenCode,
      title: "asker",
      occupantId: `opencode:${oc.pid}:${sessionId}`,
      createdAtMs: Date.now(),
      control: { baseUrl: proxy.url, sessionId, passwordFile: oc.passwordFile },
    };
    const w = await OpenCodeQuestionWatcher.attach(
      seat,
      new QuestionLedger(mkdtempSync(join(tmpdir(), "ocq-ledger-"))),
      { pollMs: 200, receiptWaitMs: 5000 },
    );
    if (!w.ok) throw new Error(w.message);
    watcher = w.watcher;
    watcher.onQuestion((q) => asked.push(q));
  });
  afterAll(async () => {
    watcher?.close();
    await proxy?.close();
    await oc?.close();
    await mock?.close();
  });

  it("rule 39: the reply OpenCode took but whose answer was lost is uncertain; a second answer is refused and never sent; reconcile_only proves delivered from the tool part", async () => {
    expect((await ask("[ask] lost one")).status).toBe(204);
    const q = await until(() => asked[0], "the question to be seen");
    expect(q).toMatchObject({
      seat: "oc-asker",
      threadId: sessionId,
      requestId: expect.stringMatching(/^que_/),
      itemId: expect.any(String),
      turnId: expect.stringMatching(/^msg_/),
    });
    expect(q.questions).toEqual([
      { id: "q1", header: "Queue", question: QUESTION.question, isOther: true, options: QUESTION.options },
    ]);
    proxy.arm("POST", /^\/question\/que_[^/]+\/reply/);
    expect(await watcher.answer(q.requestId, { q1: { answers: ["Redis"] } })).toEqual({
      result: "uncertain",
      reason: "connection_lost",
    });
    expect(proxy.lost).toEqual([expect.objectContaining({ status: 200, body: "true" })]);
    await until(() => (results().length > 0 ? true : undefined), "the model to be given the lost answer");
    const again = await watcher.answer(q.requestId, { q1: { answers: ["None"] } });
    expect(again).toMatchObject({ result: "refused", reason: "fenced", previous: { state: "uncertain" } });
    expect(await watcher.reconcile(q.requestId)).toMatchObject({
      result: "delivered",
      receipt: { callId: q.itemId, turnId: q.turnId, output: told("Redis") },
    });
    // Settled: a later reconcile reads the same, and nothing was ever sent twice.
    expect(await watcher.reconcile(q.requestId)).toMatchObject({ result: "delivered" });
    expect(results()).toEqual([told("Redis")]);
  });

  it("rule 39: a question never answered reconciles to an exact not-sent (no claim); a bad answer is refused before any claim", async () => {
    expect((await ask("[ask] never answered")).status).toBe(204);
    const q = await until(() => asked[1], "the second question to be seen");
    expect(await watcher.reconcile(q.requestId)).toMatchObject({ result: "not_sent", reason: "no_claim" });
    expect(await watcher.answer(q.requestId, { q9: { answers: ["x"] } })).toMatchObject({
      result: "refused",
      reason: "bad_answer",
    });
    expect(await watcher.reconcile(q.requestId)).toMatchObject({ result: "not_sent", reason: "no_claim" });
    expect(await watcher.answer(q.requestId, { q1: { answers: ["None"] } })).toMatchObject({
      result: "delivered",
      receipt: { output: told("None") },
    });
  });

  it("rules 35/39: a permission prompt stays with the owner: OpenCode holds it under /permission and it never surfaces as a question", async () => {
    const before = asked.length;
    expect((await ask("[perm] run the probe")).status).toBe(204);
    let perms: { id?: string; sessionID?: string; permission?: string }[] = [];
    for (let i = 0; i < 300 && perms.length === 0; i++) {
      perms = ((await (await fetch(`${oc.url}/permission`, { headers: headers() })).json()) as typeof perms).filter(
        (p) => p.sessionID === sessionId,
      );
      if (perms.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(perms, "OpenCode asked for the bash permission").toHaveLength(1);
    await watcher.poll();
    expect(asked).toHaveLength(before);
  });
});
