/**
 * Issue 13 part 4 end to end with a real Codex TUI in a real tmux pane (rules 35 and 39): the
 * worker's model calls Codex's native request_user_input; the node agent's question desk sees
 * it on the seat's own thread and files it; only the hiring conversation reads it in
 * worker_reports; its message_seat{questionAnswer} goes back as Codex's sync reply and is
 * `delivered` with the winning tool-output receipt; the model got exactly that answer, once; a
 * second answer is refused. The TUI (the owner) is shown the question and never answers it.
 * The hire row is written as the hire pipeline writes it: this suite is about the question.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { hireReceipts, seats } from "../../controller/db/schema.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore } from "../kit/test-db.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";
import { reportsOf } from "../kit/worker-reports.js";
import { until } from "../kit/until.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";
const ASK = "[ask]";
const QUESTION = {
  id: "colour",
  header: "Colour",
  question: "Which colour should the button be?",
  options: [
    { label: "Red", description: "warm" },
    { label: "Blue", description: "cool" },
  ],
};

describe("a real Codex worker's question reaches its hiring lead, whose answer is Codex's sync reply", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let tmuxSock: string;
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let controller: RunningController;
  let agent: RunningAgent;
  let hirer: LeadClient;
  let other: LeadClient;
  let seatId: string;
  let seatName: string;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer({
      toolCall: (r) =>
        r.lastUserText.includes(ASK) && r.toolNames.includes("request_user_input")
          ? { name: "request_user_input", arguments: { questions: [QUESTION] } }
          : undefined,
    });
    cx = makeCodexEnv(bin, mock.baseUrl);
    // Codex offers request_user_input outside plan mode only with this feature on.
    appendFileSync(join(cx.codexHome, "config.toml"), "\n[features]\ndefault_mode_request_user_input = true\n");
    tmuxSock = join(cx.root, "tmux.sock");
    const env = Object.entries(cx.env).map(([k, v]) => `${k}=${v}`);
    execFileSync(TMUX, [
      "-S",
      tmuxSock,
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      "-s",
      "fleet",
      "-x",
      "200",
      "-y",
      "50",
      "-c",
      cx.workDir,
      "/usr/bin/env",
      ...env,
      bin,
      "-C",
      cx.workDir,
    ]);
    store = await prepareStore("pglite");
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 1000,
      }),
      silentLogger,
    );
    agent = await startAgent(
      compileAgentConfig({
        stateDir: join(store.stateDir, "agent"),
        controllerUrl: controller.agentUrl,
        joinToken: await controller.issueJoinToken("testbox"),
        machine: "testbox",
        paneHost: "tmux",
        tmuxSocket: tmuxSock,
        statusRefreshMs: 300,
      }),
      silentLogger,
    );
    await agent.linked;
    const owner = ownerOf(controller.url, controller.ownerToken);
    hirer = await connectLead(controller.mcpUrl, (await owner.owner.issueLeadToken({ conversationId: "hirer" })).token);
    other = await connectLead(
      controller.mcpUrl,
      (await owner.owner.issueLeadToken({ conversationId: "bystander" })).token,
    );
  });

  afterAll(async () => {
    await hirer?.close();
    await other?.close();
    await agent?.close();
    await controller?.close();
    await store?.cleanup();
    try {
      execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
  });

  it("the question is filed for the hiring conversation only, and its answer is delivered with the winning tool-output receipt", async () => {
    const db = controller.database.db;
    // Discovered, with live control (as codex-fleet waits for it).
    const row = await until(
      async () =>
        (await db.select().from(seats).where(eq(seats.kind, "codex"))).find(
          (s) => s.inputCapabilities.deliveryModes.length > 0,
        ),
      "the Codex seat to be discovered with live control",
    );
    seatId = row.id;
    seatName = row.name;
    await db.insert(hireReceipts).values({
      id: randomUUID(),
      conversationId: "hirer",
      fingerprint: "f",
      machine: "testbox",
      harness: "codex",
      state: "spawned",
      seatId: row.id,
      occupantId: row.occupantId,
    });
    // A first turn gives the thread its rollout; the desk attaches once it can resume it.
    const hello = await hirer.call("message_seat", { seat: seatName, message: "hello" });
    expect(hello.structuredContent, JSON.stringify(hello.structuredContent)).toMatchObject({ outcome: "delivered" });
    await mock.waitFor((q) => q.lastUserText.includes("hello"));
    await until(() => agent.watchingQuestions(seatName), "the agent's question desk to watch the seat's thread", 300);
    const ask = await hirer.call("message_seat", { seat: seatName, message: `${ASK} pick a colour` });
    expect(ask.structuredContent, JSON.stringify(ask.structuredContent)).toMatchObject({ outcome: "delivered" });
    const asked = await mock.waitFor((q) => q.lastUserText.includes(ASK));
    expect(asked.toolNames).toContain("request_user_input");
    const report = await until(
      async () => (await reportsOf(hirer)).find((x) => x.text.startsWith(`Question from seat ${seatId}`)),
      "the question to reach the hiring lead",
    );
    expect(report.text).toContain(QUESTION.question);
    expect((await reportsOf(other)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
    const requestId = /requestId ([^;]+);/.exec(report.text)![1]!;
    // The bystander may not answer.
    const foreign = await other.call("message_seat", {
      seat: seatName,
      questionAnswer: { requestId, answers: { colour: { answers: ["Red"] } } },
    });
    expect(foreign.structuredContent).toMatchObject({ outcome: "refused", reason: "not_authorized" });
    const answered = await hirer.call("message_seat", {
      seat: seatName,
      questionAnswer: { requestId, answers: { colour: { answers: ["Blue"] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      nativeReceiptId: expect.stringMatching(/\/call_/),
    });
    // The rollout holds the output as Codex sends it on to the model: wait for that request.
    await mock.waitFor((q) => q.turnToolOutputs.some((o) => o.output.includes('"colour"')));
    const outputs = mock.requests.flatMap((r) => r.turnToolOutputs).filter((o) => o.output.includes('"colour"'));
    expect(outputs.map((o) => JSON.parse(o.output))).toEqual([{ answers: { colour: { answers: ["Blue"] } } }]);
    // One answer per question: a second is refused, nothing sent.
    const again = await hirer.call("message_seat", {
      seat: seatName,
      questionAnswer: { requestId, answers: { colour: { answers: ["Red"] } } },
    });
    expect(again.structuredContent).toMatchObject({ outcome: "refused", reason: "already_answered" });
  });
});
