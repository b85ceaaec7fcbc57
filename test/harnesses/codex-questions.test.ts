/**
 * Issue 13 part 4 (rules 35 and 39, ADR 0207 "Informational questions"): a real Codex worker
 * asks through its native request_user_input tool (the mock model calls it, in plan mode),
 * the agent's watcher sees the question on the app-server bound to seat, pane, thread, turn,
 * tool call and request id, and answers with the sync reply. A driver connection plays the
 * owner's TUI on the same thread: the app-server sends it the same request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import {
  CodexConnection,
  type CodexNotification,
  type CodexServerRequest,
} from "../../node-agent/harnesses/codex/connection.js";
import { CodexQuestionWatcher, type WorkerQuestion } from "../../node-agent/harnesses/codex/questions.js";
import { QuestionLedger } from "../../node-agent/questions/question-ledger.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, startAppServer, type CodexEnv } from "./kit/codex-env.js";
import { startCutAfterResponse } from "./kit/codex-cut-after-response.js";

const bin = requireHarness("codex");
const ASK = "[ask]";
const EXEC = "[exec]";
const QUESTION = {
  id: "colour",
  header: "Colour",
  question: "Which colour should the button be?",
  options: [
    { label: "Red", description: "warm" },
    { label: "Blue", description: "cool" },
  ],
};
const PLAN = { mode: "plan", settings: { model: "mock-model", reasoning_effort: null, developer_instructions: null } };

async function until<T>(probe: () => T | undefined | false, what: string, tries = 300): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

describe("a Codex worker's question reaches the lead and is answered natively (issue 13 part 4)", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let server: ChildProcess;
  let sock: string;
  let owner: CodexConnection;
  const ownerRequests: CodexServerRequest[] = [];
  const completed = new Set<string>();
  let ownerAnswer: ((r: CodexServerRequest) => void) | undefined;
  let n = 0;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer({
      toolCall: (r) => {
        if (r.lastUserText.includes(ASK) && r.toolNames.includes("request_user_input"))
          return { name: "request_user_input", arguments: { questions: [QUESTION] } };
        if (r.lastUserText.includes(EXEC) && r.toolNames.includes("exec_command"))
          return { name: "exec_command", arguments: { cmd: `touch ${join(cx.workDir, "approved")}` } };
        return undefined;
      },
    });
    cx = makeCodexEnv(bin!, mock.baseUrl);
    sock = join(cx.root, "own.sock");
    server = await startAppServer(bin!, cx, sock);
    const d = await CodexConnection.open(sock, { clientName: "owner_tui" });
    if (!d.ok) throw new Error(d.message);
    owner = d.connection;
    owner.onServerRequest((r) => {
      ownerRequests.push(r);
      ownerAnswer?.(r);
    });
    owner.onNotification((m: CodexNotification) => {
      if (m.method === "turn/completed") completed.add(String((m.params.turn as { id?: unknown })?.id));
    });
  });

  afterAll(async () => {
    owner?.close();
    if (server?.pid) process.kill(-server.pid, "SIGKILL");
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
  });

  async function turn(threadId: string, text: string, extra: Record<string, unknown> = {}): Promise<string> {
    const r = await owner.call<{ turn: { id: string } }>("turn/start", {
      threadId,
      input: [{ type: "text", text, text_elements: [] }],
      ...extra,
    });
    if (!r.ok) throw new Error(r.message);
    return r.result.turn.id;
  }

  /** A thread the owner's TUI owns, with one finished turn (so it has a rollout), and a watcher on it. */
  async function seatWithWatcher(endpoint = sock): Promise<{
    threadId: string;
    watcher: CodexQuestionWatcher;
    agent: CodexConnection;
    seen: WorkerQuestion[];
    ledgerDir: string;
  }> {
    const t = await owner.call<{ thread: { id: string } }>("thread/start", { cwd: cx.workDir });
    if (!t.ok) throw new Error(t.message);
    const threadId = t.result.thread.id;
    const first = await turn(threadId, "hello");
    await until(() => completed.has(first), "the first turn to finish");
    const a = await CodexConnection.open(endpoint, { clientName: "clankie_node_agent" });
    if (!a.ok) throw new Error(a.message);
    const ledgerDir = join(cx.root, `ledger-${++n}`);
    const w = await CodexQuestionWatcher.attach(
      a.connection,
      { seat: `codex-${n}`, occupantId: `codex:direct:${threadId}`, paneId: `%${n}`, threadId },
      new QuestionLedger(ledgerDir),
    );
    if (!w.ok) throw new Error(w.message);
    const seen: WorkerQuestion[] = [];
    w.watcher.onQuestion((q) => seen.push(q));
    return { threadId, watcher: w.watcher, agent: a.connection, seen, ledgerDir };
  }

  it("rule 39 sync reply: the question is bound to seat, pane, thread, turn, call and request; the answer is delivered only with the winning tool-output receipt", async () => {
    ownerAnswer = undefined;
    const { threadId, watcher, agent, seen } = await seatWithWatcher();
    const turnId = await turn(threadId, `${ASK} pick a colour`, { collaborationMode: PLAN });
    const q = await until(() => seen[0], "the question to surface");
    expect(q).toMatchObject({
      seat: `codex-${n}`,
      paneId: `%${n}`,
      threadId,
      turnId,
      itemId: expect.stringMatching(/^call_/),
      requestId: expect.any(String),
    });
    expect(q.questions).toEqual([{ ...QUESTION, isOther: true }]);
    const out = await watcher.answer(q.requestId, { colour: { answers: ["Blue"] } });
    expect(out).toMatchObject({ result: "delivered", receipt: { callId: q.itemId, turnId } });
    // What the model was given is our answer, once. Codex 0.171.0 completes the tool-output item (our
    // receipt) before its next model request goes out, where 0.169.0 sent the request first: wait for it.
    const toModel = () => mock.requests.flatMap((r) => r.turnToolOutputs).filter((o) => o.callId === q.itemId);
    await until(() => (toModel().length > 0 ? true : undefined), "the answer to reach the model");
    const given = toModel();
    expect(given.map((o) => JSON.parse(o.output))).toEqual([{ answers: { colour: { answers: ["Blue"] } } }]);
    // A second answer to the same request is refused, with the first's outcome.
    const again = await watcher.answer(q.requestId, { colour: { answers: ["Red"] } });
    expect(again).toMatchObject({ result: "refused", reason: "already_answered", previous: { state: "delivered" } });
    await until(() => completed.has(turnId), "the asking turn to finish");
    watcher.close();
    agent.close();
  });

  it("rule 39: the owner answered in the TUI before the lead: unconfirmed / answered_concurrently_by_owner, and nothing of ours reaches the model", async () => {
    ownerAnswer = (r) => void owner.respond(r.id, { answers: { colour: { answers: ["Red"] } } });
    const { threadId, watcher, agent, seen } = await seatWithWatcher();
    const turnId = await turn(threadId, `${ASK} pick a colour`, { collaborationMode: PLAN });
    const q = await until(() => seen[0], "the question to surface");
    await until(() => watcher.open().length === 0, "the owner's answer to resolve the request");
    const out = await watcher.answer(q.requestId, { colour: { answers: ["Blue"] } });
    expect(out).toMatchObject({ result: "unconfirmed", reason: "answered_concurrently_by_owner" });
    await until(() => completed.has(turnId), "the asking turn to finish");
    const given = mock.requests.flatMap((r) => r.turnToolOutputs).filter((o) => o.callId === q.itemId);
    expect(given.map((o) => JSON.parse(o.output))).toEqual([{ answers: { colour: { answers: ["Red"] } } }]);
    ownerAnswer = undefined;
    watcher.close();
    agent.close();
  });

  it("rule 39: owner and lead answer at once, the owner's frame first: the receipt shows the owner's answer, so ours is unconfirmed / answered_concurrently_by_owner", async () => {
    let watcherRef: CodexQuestionWatcher | undefined;
    let raced: Promise<unknown> | undefined;
    const { threadId, watcher, agent, seen } = await seatWithWatcher();
    watcherRef = watcher;
    // The owner answers the instant the request arrives; the lead's answer goes out in the same tick.
    ownerAnswer = (r) => {
      void owner.respond(r.id, { answers: { colour: { answers: ["Red"] } } });
    };
    watcher.onQuestion((q) => (raced = watcherRef!.answer(q.requestId, { colour: { answers: ["Blue"] } })));
    const turnId = await turn(threadId, `${ASK} pick a colour`, { collaborationMode: PLAN });
    const q = await until(() => seen[0], "the question to surface");
    await until(() => raced, "the lead's answer to start");
    const out = (await raced) as { result: string };
    await until(() => completed.has(turnId), "the asking turn to finish");
    const given = mock.requests
      .flatMap((r) => r.turnToolOutputs)
      .filter((o) => o.callId === q.itemId)
      .map((o) => JSON.parse(o.output));
    expect(given).toHaveLength(1);
    // Whichever frame won, the outcome names it: never delivered unless the model got our answer.
    if (given[0].answers.colour.answers[0] === "Blue") expect(out).toMatchObject({ result: "delivered" });
    else expect(out).toMatchObject({ result: "unconfirmed", reason: "answered_concurrently_by_owner" });
    ownerAnswer = undefined;
    watcher.close();
    agent.close();
  });

  it("rule 39: a lost answer is uncertain, a second answer is fenced (never sent), and reconcile settles it from the receipt", async () => {
    ownerAnswer = undefined;
    const relay = await startCutAfterResponse(sock, join(cx.root, `cut-${n + 1}.sock`));
    const { threadId, watcher, agent, seen, ledgerDir } = await seatWithWatcher(relay.socketPath);
    const turnId = await turn(threadId, `${ASK} pick a colour`, { collaborationMode: PLAN });
    const q = await until(() => seen[0], "the question to surface");
    const out = await watcher.answer(q.requestId, { colour: { answers: ["Blue"] } }, { waitMs: 3000 });
    expect(out).toMatchObject({ result: "uncertain", reason: "connection_lost" });
    const second = await watcher.answer(q.requestId, { colour: { answers: ["Red"] } });
    expect(second).toMatchObject({ result: "refused", reason: "fenced", previous: { state: "uncertain" } });
    // The fence is on disk: a new agent process (a fresh ledger on the same directory) refuses too.
    expect(new QuestionLedger(ledgerDir).claim(q, "{}", Date.now())).toMatchObject({
      ok: false,
      existing: { state: "uncertain" },
    });
    expect(relay.responsesForwarded()).toBe(1);
    await until(() => completed.has(turnId), "the asking turn to finish");
    // AnswerQuestion{reconcile_only}'s path: re-reads the rollout's winning output; a second read proves the same.
    expect(await watcher.reconcileRequest(q.requestId)).toMatchObject({
      result: "delivered",
      receipt: { callId: q.itemId, turnId },
    });
    expect(await watcher.reconcileRequest(q.requestId)).toMatchObject({ result: "delivered" });
    expect(relay.responsesForwarded()).toBe(1);
    watcher.close();
    agent.close();
    await relay.close();
  });

  it("rules 35/39: an exec approval request stays with the owner: it never surfaces as a question", async () => {
    ownerAnswer = (r) => {
      if (r.method === "item/commandExecution/requestApproval") void owner.respond(r.id, { decision: "decline" });
    };
    const { threadId, watcher, agent, seen } = await seatWithWatcher();
    const turnId = await turn(threadId, `${EXEC} make a file`, { approvalPolicy: "untrusted" });
    await until(() => completed.has(turnId), "the exec turn to finish");
    expect(ownerRequests.map((r) => r.method)).toContain("item/commandExecution/requestApproval");
    expect(watcher.ownerOnly).toContain("item/commandExecution/requestApproval");
    expect(seen).toEqual([]);
    expect(watcher.open()).toEqual([]);
    ownerAnswer = undefined;
    watcher.close();
    agent.close();
  });
});
