/**
 * Issue 13 part 4 with a real Claude Code (rule 35: "questions go via plugin hooks bound to
 * pane, session and tool call; answers are hook JSON, never keys"; rule 39's owner race). The
 * Claude TUI runs in a private tmux server with `clankie worker question-hook` as its
 * PreToolUse hook for AskUserQuestion; the node agent discovers it as a seat. A lead messages
 * the seat, the mock model calls AskUserQuestion; the hook's question, proved by the agent to
 * come from the seat's pane, Claude and session, is filed for the hiring conversation only (not
 * the one that messaged the seat); its message_seat{questionAnswer} is printed by the hook as
 * hook JSON and is `delivered` with the transcript's tool_result receipt; the model got exactly
 * that answer, once; the answer is a seat-call receipt (replay, reconcile; a lost result stays
 * uncertain, is never resent, and reconcile settles it from the transcript). When the hook's
 * bounded wait ends first, the owner answers in Claude's own dialog and the lead's late answer
 * is `unconfirmed` / `answered_concurrently_by_owner`: the model got only the owner's answer; the
 * owner interrupting (Esc) while the hook holds the question ends the same way. A permission
 * prompt (a Bash call) stays the owner's: nothing reaches any lead.
 * The hire row is written as the hire pipeline writes it: this suite is about the question.
 */
import { randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hireReceipts, seats } from "../../controller/db/schema.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt, CLI } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startClaudeTui, type ClaudeTui } from "./kit/claude-tui.js";
import { prepareWorkerReportStore, startWorkerReportFleet, type WorkerReportFleet } from "./kit/worker-report-fleet.js";
import { reportsOf } from "../kit/worker-reports.js";
import { until } from "../kit/until.js";

const bin = requireHarness("claude");
const ASK = "[ask]";
const BASH = "[bash]";
const QUESTION = {
  question: "Which colour should the button be?",
  header: "Colour",
  options: [
    { label: "Red", description: "warm" },
    { label: "Blue", description: "cool" },
  ],
  multiSelect: false,
};
/** The hook's bounded wait in this suite: long enough for the lead, short enough to see the owner's fallback. */
const WAIT_SECONDS = 40;
const META = "clankie/seat-call";
const told = (answer: string) =>
  `Your questions have been answered: "${QUESTION.question}"="${answer}". You can now continue with these answers in mind.`;

describe("a real Claude Code worker's AskUserQuestion reaches its hiring lead, whose answer is the PreToolUse hook's JSON", () => {
  let mock: MockAnthropicServer;
  let tui: ClaudeTui;
  let fleet: WorkerReportFleet;
  let hirer: LeadClient;
  let seat: { id: string; name: string };

  beforeAll(async () => {
    if (!bin)
      throw new Error("claude is not installed in .harnesses/claude: run `npm run harnesses:install -- claude`");
    assertBuilt();
    mock = await startMockAnthropicServer({
      toolUse: (r) =>
        r.latestUserText.includes(ASK) && r.toolNames.includes("AskUserQuestion")
          ? { name: "AskUserQuestion", input: { questions: [QUESTION] } }
          : r.latestUserText.includes(BASH) && r.toolNames.includes("Bash")
            ? { name: "Bash", input: { command: "touch clankie-permission-probe.txt", description: "Create a file" } }
            : undefined,
    });
    const store = await prepareWorkerReportStore();
    const hook = [
      process.execPath,
      CLI,
      "worker",
      "question-hook",
      "--agent-state-dir",
      store.agentStateDir,
      "--wait-seconds",
      String(WAIT_SECONDS),
    ]
      .map((a) => `'${a}'`)
      .join(" ");
    tui = await startClaudeTui(bin, mock.url, {
      channelDir: join(store.agentStateDir, "claude", "channels"),
      reportDir: join(store.agentStateDir, "claude", "sessions"),
      preToolUse: [{ matcher: "AskUserQuestion", command: hook }],
    });
    const tmuxSocket = join(process.env.TMUX_TMPDIR ?? "/tmp", `tmux-${process.getuid!()}`, tui.tmuxSocket);
    fleet = await startWorkerReportFleet(store, mock, tmuxSocket);
    seat = await fleet.seat("claude");
    const db = fleet.controller.database.db;
    const [row] = await db.select().from(seats).where(eq(seats.id, seat.id));
    await db.insert(hireReceipts).values({
      id: randomUUID(),
      conversationId: "hirer",
      fingerprint: "f",
      machine: "workbox",
      harness: "claude",
      state: "spawned",
      seatId: row!.id,
      occupantId: row!.occupantId,
    });
    hirer = await connectLead(
      fleet.controller.mcpUrl,
      (
        await ownerOf(fleet.controller.url, fleet.controller.ownerToken).owner.issueLeadToken({
          conversationId: "hirer",
        })
      ).token,
    );
  });
  afterAll(async () => {
    await hirer?.close().catch(() => {});
    mock?.release();
    await fleet?.close();
    await tui?.close();
    await mock?.close();
  });

  /** The lead messages the seat; the model asks; resolves with the question's report for the hirer and its requestId. */
  const askQuestion = async (tag: string) => {
    const before = new Set((await reportsOf(hirer)).map((r) => r.deliveryId));
    await fleet.message(seat.name, `${ASK} ${tag}`);
    const report = await until(
      async () =>
        (await reportsOf(hirer)).find(
          (x) => !before.has(x.deliveryId) && x.text.startsWith(`Question from seat ${seat.id}`),
        ),
      "the question to reach the hiring lead",
      300,
    );
    return { report, requestId: /requestId ([^;]+);/.exec(report.text)![1]! };
  };
  /** Every distinct tool_result the model was given for our question, across all requests. */
  const toldModel = () => [
    ...new Set(mock.requests.flatMap((r) => r.turnToolResults).filter((t) => t.includes(QUESTION.question))),
  ];

  it("rule 35: the question is filed for the hiring conversation only; its answer is hook JSON, delivered with the transcript receipt, and the model got exactly it once", async () => {
    const { report, requestId } = await askQuestion("pick a colour");
    expect(requestId).toMatch(/^toolu_/);
    expect(report.text).toContain(QUESTION.question);
    expect(report.text).toContain("[q1] Colour:");
    // The conversation that messaged the seat (the fleet's own lead) does not get it, and may not answer.
    expect((await reportsOf(fleet.lead)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
    const foreign = await fleet.lead.call("message_seat", {
      seat: seat.name,
      questionAnswer: { requestId, answers: { q1: { answers: ["Red"] } } },
    });
    expect(foreign.structuredContent).toMatchObject({ outcome: "refused", reason: "not_authorized" });
    const id = randomUUID();
    const answered = await hirer.call(
      "message_seat",
      { seat: seat.name, questionAnswer: { requestId, answers: { q1: { answers: ["Blue"] } } } },
      { [META]: { deliveryId: id } },
    );
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      deliveryId: id,
      nativeReceiptId: expect.stringContaining(`/${requestId}`),
    });
    await mock.waitForRequest(ASK);
    await until(() => toldModel().length > 0, "the model to be given the tool result");
    expect(toldModel()).toEqual([told("Blue")]);
    // No dialog was shown for it: the owner's pane only shows the answered question.
    expect(tui.capture()).not.toMatch(/Enter to select/);
    // A receipt like any message_seat: the same id replays the original, reconcile reads it.
    const replay = await hirer.call(
      "message_seat",
      { seat: seat.name, questionAnswer: { requestId, answers: { q1: { answers: ["Blue"] } } } },
      { [META]: { deliveryId: id } },
    );
    expect(replay.structuredContent).toEqual(answered.structuredContent);
    expect((await hirer.call("reconcile_seat_call", { deliveryId: id })).structuredContent).toEqual(
      answered.structuredContent,
    );
    // One answer per question: a second (new id) is refused, nothing sent.
    const again = await hirer.call("message_seat", {
      seat: seat.name,
      questionAnswer: { requestId, answers: { q1: { answers: ["Red"] } } },
    });
    expect(again.structuredContent).toMatchObject({ outcome: "refused", reason: "already_answered" });
    expect(toldModel()).toEqual([told("Blue")]);
  });

  it("rule 39 / VUH-1638: an answer whose result is lost is uncertain and never resent; a same-id replay stays uncertain; reconcile_seat_call reads the transcript receipt and settles it delivered", async () => {
    const { requestId } = await askQuestion("pick with a lost answer");
    const dropped = fleet.faults.armDrop("drop_question_answer");
    const id = randomUUID();
    const lost = await hirer.call(
      "message_seat",
      { seat: seat.name, questionAnswer: { requestId, answers: { q1: { answers: ["Red"] } } } },
      { [META]: { deliveryId: id } },
    );
    await dropped;
    expect(lost.structuredContent, JSON.stringify(lost.structuredContent)).toMatchObject({
      outcome: "uncertain",
      deliveryId: id,
      reconcileTool: "reconcile_seat_call",
    });
    expect(lost._meta?.[META]).toMatchObject({ id, state: "uncertain" });
    const thisTurn = () => [
      ...new Set(
        mock.requests
          .filter((r) => r.latestUserText.includes("pick with a lost answer"))
          .flatMap((r) => r.turnToolResults),
      ),
    ];
    await until(() => thisTurn().length > 0, "the model to be given the answer the agent did send");
    // The replay is answered from the receipt: the agent is not asked again, nothing is resent.
    const replay = await hirer.call(
      "message_seat",
      { seat: seat.name, questionAnswer: { requestId, answers: { q1: { answers: ["Red"] } } } },
      { [META]: { deliveryId: id } },
    );
    expect(replay.structuredContent).toEqual(lost.structuredContent);
    const rec = await hirer.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      deliveryId: id,
      nativeReceiptId: expect.stringContaining(`/${requestId}`),
    });
    expect(rec._meta?.[META]).toMatchObject({ id, state: "settled" });
    expect(
      (
        await hirer.call(
          "message_seat",
          { seat: seat.name, questionAnswer: { requestId, answers: { q1: { answers: ["Red"] } } } },
          { [META]: { deliveryId: id } },
        )
      ).structuredContent,
    ).toEqual(rec.structuredContent);
    expect(thisTurn()).toEqual([told("Red")]);
  });

  it("rule 39: when the hook's wait ends first, the owner answers in Claude's dialog and the lead's late answer is unconfirmed / answered_concurrently_by_owner", async () => {
    const { requestId } = await askQuestion("pick again");
    // The lead does not answer in time: the hook lets go and Claude shows the owner its own dialog.
    await until(
      () => /Enter to select/.test(tui.capture()),
      "Claude's question dialog after the hook's wait",
      (WAIT_SECONDS + 40) * 10,
    );
    execFileSync("tmux", ["-L", tui.tmuxSocket, "send-keys", "-t", tui.paneId, "Enter"]);
    await until(
      () => mock.requests.some((r) => r.turnToolResults.includes(told("Red"))),
      "the owner's answer to reach the model",
    );
    const late = await hirer.call("message_seat", {
      seat: seat.name,
      questionAnswer: { requestId, answers: { q1: { answers: ["Blue"] } } },
    });
    expect(late.structuredContent, JSON.stringify(late.structuredContent)).toMatchObject({
      outcome: "unconfirmed",
      reason: "answered_concurrently_by_owner",
      nativeReceiptId: expect.stringContaining(`/${requestId}`),
    });
    // Never two answers: in this turn the model got the owner's alone, and the question takes no further answer.
    const thisTurn = [
      ...new Set(
        mock.requests.filter((r) => r.latestUserText.includes("pick again")).flatMap((r) => r.turnToolResults),
      ),
    ];
    expect(thisTurn).toEqual([told("Red")]);
    expect(
      (
        await hirer.call("message_seat", {
          seat: seat.name,
          questionAnswer: { requestId, answers: { q1: { answers: ["Blue"] } } },
        })
      ).structuredContent,
    ).toMatchObject({ outcome: "refused", reason: "already_answered" });
  });

  it("rule 39: the owner interrupting (Esc) while the hook holds the question takes it back: the lead's answer is unconfirmed and never reaches the model", async () => {
    const { requestId } = await askQuestion("pick once more");
    execFileSync("tmux", ["-L", tui.tmuxSocket, "send-keys", "-t", tui.paneId, "Escape"]);
    // The pane shows the interrupted question as declined: 2.1.197 said "User declined to answer questions";
    // 2.1.332 changed it to "Declined to answer Claude's questions:" with the question beneath.
    await until(
      () => /Declined to answer Claude's questions/.test(tui.capture()),
      "Claude to show the owner's interrupt",
      300,
    );
    const late = await hirer.call("message_seat", {
      seat: seat.name,
      questionAnswer: { requestId, answers: { q1: { answers: ["Blue"] } } },
    });
    expect(late.structuredContent, JSON.stringify(late.structuredContent)).toMatchObject({
      outcome: "unconfirmed",
      reason: "answered_concurrently_by_owner",
    });
    const thisTurn = mock.requests
      .filter((r) => r.latestUserText.includes("pick once more"))
      .flatMap((r) => r.turnToolResults);
    expect(thisTurn.filter((t) => t.includes('"Blue"'))).toEqual([]);
  });

  it("rule 35: a permission prompt is never delegated: Claude asks the owner in the pane and no lead is offered anything", async () => {
    const before = new Set((await reportsOf(hirer)).map((r) => r.deliveryId));
    await fleet.message(seat.name, `${BASH} run it`);
    await until(
      () => /Do you want to proceed/.test(tui.capture()),
      "Claude's own permission prompt for the Bash call",
      600,
    );
    expect((await reportsOf(hirer)).filter((r) => !before.has(r.deliveryId))).toEqual([]);
    expect((await reportsOf(fleet.lead)).filter((r) => r.text.startsWith("Question from"))).toEqual([]);
    // The owner declines in the pane.
    execFileSync("tmux", ["-L", tui.tmuxSocket, "send-keys", "-t", tui.paneId, "Escape"]);
    await until(() => !/Do you want to proceed/.test(tui.capture()), "the owner's decline to close the prompt", 300);
  });
});
