/**
 * Issue 13 part 4 with a hired real OpenCode (pinned 1.18.33) in real tmux (rules 35 and 39):
 * the mock model calls OpenCode's native `question` tool; the agent's watcher on the seat's own
 * password-protected loopback server sees the pending request and files it for the hiring
 * conversation only; the lead's message_seat{questionAnswer} is the native reply
 * (`POST /question/{id}/reply`), `delivered` only because the question's tool part carries our
 * answers, and the model is given exactly that answer once. When the owner answers first in the
 * TUI's own question dialog (in the pane: Enter picks the first option), the lead's answer is
 * `unconfirmed` / `answered_concurrently_by_owner`, and the model gets the owner's answer only;
 * the owner dismissing it there (Esc) is the same, and the lead's answer never reaches the model.
 * When the agent's answer is lost on its way back (the controller's drop point), the call is
 * `uncertain`, and reconcile_seat_call asks the agent's reconcile_only, which re-reads the tool
 * part and settles it `delivered`, sending nothing.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import { workerCallFaults } from "../kit/worker-call-faults.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { reportsOf } from "../kit/worker-reports.js";
import { until as waitUntil, type Probe } from "../kit/until.js";

const bin = requireHarness("opencode");
const META = "clankie/seat-call";
const faults = workerCallFaults();
const ASK = "[ask]";
const QUESTION = {
  question: "Which database should the service use?",
  header: "Database",
  options: [
    { label: "PostgreSQL", description: "shared" },
    { label: "SQLite", description: "local" },
  ],
};
const told = (answer: string) =>
  `User has answered your questions: "${QUESTION.question}"="${answer}". You can now continue with the user's answers in mind.`;

const until = <T>(probe: Probe<T>, what: string, tries = 900): Promise<T> => waitUntil(probe, what, tries);

describe("a hired OpenCode's native question reaches its hiring lead and is answered through /question/{id}/reply", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  let hiring: LeadClient;
  let other: LeadClient;
  let seat: string;

  beforeAll(async () => {
    if (!bin)
      throw new Error("opencode is not installed in .harnesses/opencode: run `npm run harnesses:install -- opencode`");
    assertBuilt();
    mock = await startMockAnthropicServer({
      toolUse: (r) =>
        r.latestUserText.includes(ASK) && r.toolNames.includes("question")
          ? { name: "question", input: { questions: [QUESTION] } }
          : undefined,
    });
    env = openCodeHireEnv(bin, mock.url);
    fleet = await startHireFleet("pglite", { hire: env.hire, hooks: { faults } });
    hiring = await fleet.leadFor("hiring-lead");
    other = await fleet.leadFor("other-lead");
    const res = await hiring.call("hire_agent", {
      harness: "opencode",
      workingDirectory: env.work,
      title: "opencode asker",
      role: "asker",
      brief: `${ASK} choose the database`,
      model: env.model,
    });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "spawned" });
    seat = res.structuredContent!.seat as string;
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  const questionFor = (l: LeadClient, seen: Set<string>, sent = "") =>
    until(
      async () =>
        (await reportsOf(l)).find((x) => x.text.startsWith(`Question from seat ${seat}`) && !seen.has(x.deliveryId)),
      `the hired seat's question to reach the hiring lead (message_seat said ${sent}; model saw ${JSON.stringify(mock.requests.map((r) => [r.latestUserText.slice(0, 40), r.toolNames.length, r.turnToolResults]))})`,
    );
  const seen = new Set<string>();
  /** The seat's own server, as the owner's TUI reaches it: the hire names its password file by the server's port. */
  const seatServer = () => {
    const files = readdirSync(join(fleet.agentStateDir, "opencode", "passwords")).filter((f) =>
      /^\d+\.password$/.test(f),
    );
    expect(files).toHaveLength(1);
    return {
      server: `http://127.0.0.1:${files[0]!.split(".")[0]}`,
      auth: `Basic ${Buffer.from(`opencode:${readFileSync(join(fleet.agentStateDir, "opencode", "passwords", files[0]!), "utf8").trim()}`).toString("base64")}`,
    };
  };
  /** Once the seat's last turn ended, the hiring lead's message starts a turn that asks again. */
  const askAgain = async (text: string) => {
    const { server, auth } = seatServer();
    await until(async () => {
      const status = (await (
        await fetch(`${server}/session/status?directory=${encodeURIComponent(env.work)}`, {
          headers: { authorization: auth },
        })
      ).json()) as Record<string, { type?: string }>;
      return Object.values(status).every((x) => x.type === "idle") || undefined;
    }, "the seat's last turn to end");
    const sent = await hiring.call("message_seat", { seat, message: `${ASK} ${text}` });
    expect(sent.isError, JSON.stringify(sent)).toBeFalsy();
    const report = await questionFor(hiring, seen, JSON.stringify(sent.structuredContent));
    seen.add(report.deliveryId);
    return {
      requestId: /requestId ([^;]+);/.exec(report.text)![1]!,
      callId: /call ([^)]+)\)/.exec(report.text)![1]!,
      server,
      auth,
    };
  };

  it("rule 35 / issue 13 part 4: the brief turn's question is filed for the hiring conversation only, and the native reply is delivered with the tool part's receipt", async () => {
    const report = await questionFor(hiring, seen);
    seen.add(report.deliveryId);
    expect(report.text).toContain(QUESTION.question);
    expect((await reportsOf(other)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
    expect((await reportsOf(fleet.lead)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
    const requestId = /requestId ([^;]+);/.exec(report.text)![1]!;
    expect(requestId).toMatch(/^que_/);
    const callId = /call ([^)]+)\)/.exec(report.text)![1]!;
    const answered = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { q1: { answers: ["SQLite"] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      deliveryId: expect.any(String),
      nativeReceiptId: expect.stringContaining(`/${callId}`),
    });
    await until(
      () => mock.requests.some((r) => r.turnToolResults.includes(told("SQLite"))),
      "the model to be given the lead's answer",
    );
    expect(mock.requests.flatMap((r) => r.turnToolResults).filter((t) => t.includes(QUESTION.question))).toEqual([
      told("SQLite"),
    ]);
    // Rule 39: a second answer to the same request is refused from the ledger; nothing more reaches the model.
    const again = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { q1: { answers: ["PostgreSQL"] } } },
    });
    expect(JSON.stringify(again.structuredContent)).not.toContain('"outcome":"delivered"');
    expect(mock.requests.flatMap((r) => r.turnToolResults).some((t) => t.includes("PostgreSQL"))).toBe(false);
  });

  it("rule 39: the owner answers first in the TUI; the lead's answer is unconfirmed / answered_concurrently_by_owner and the model gets the owner's answer only", async () => {
    const { requestId, server, auth } = await askAgain("choose again");
    // The owner answers in the TUI: its question dialog is in the seat's pane; Enter picks the first option.
    const pane = fleet.panes().find((p) => p.hire !== "" && !p.dead)!.paneId;
    const screen = () =>
      execFileSync("tmux", ["-S", fleet.tmuxSocket, "capture-pane", "-p", "-t", pane], { encoding: "utf8" });
    await until(() => screen().includes(QUESTION.question) || undefined, "the TUI to show the question");
    execFileSync("tmux", ["-S", fleet.tmuxSocket, "send-keys", "-t", pane, "Enter"]);
    const pendingNow = async () =>
      (
        (await (await fetch(`${server}/question`, { headers: { authorization: auth } })).json()) as { id: string }[]
      ).some((q) => q.id === requestId);
    await until(
      async () => !(await pendingNow()) || undefined,
      `the owner's answer in the TUI to be taken (screen: ${screen()})`,
      100,
    );
    const answered = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { q1: { answers: ["SQLite"] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "unconfirmed",
      reason: "answered_concurrently_by_owner",
      requestId,
    });
    await until(
      () => mock.requests.some((r) => r.turnToolResults.includes(told("PostgreSQL"))),
      "the model to be given the owner's answer",
    );
    expect(mock.requests.flatMap((r) => r.turnToolResults).filter((t) => t.includes(QUESTION.question))).toEqual([
      told("SQLite"),
      told("PostgreSQL"),
    ]);
  });

  it("rule 39 / VUH-1638: the agent's answer lost on its way back is uncertain; reconcile_seat_call re-reads the tool part through reconcile_only and settles it delivered, sending nothing", async () => {
    const { requestId, callId } = await askAgain("choose with a lost answer");
    const dropped = faults.armDrop("drop_question_answer");
    const id = randomUUID();
    const lost = await hiring.call(
      "message_seat",
      { seat, questionAnswer: { requestId, answers: { q1: { answers: ["SQLite"] } } } },
      { [META]: { deliveryId: id } },
    );
    await dropped;
    expect(lost.structuredContent, JSON.stringify(lost.structuredContent)).toMatchObject({
      outcome: "uncertain",
      deliveryId: id,
      reconcileTool: "reconcile_seat_call",
    });
    await until(
      () => mock.requests.filter((r) => r.turnToolResults.includes(told("SQLite"))).length >= 2 || undefined,
      "the model to be given the answer the agent did send",
    );
    const rec = await hiring.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
      deliveryId: id,
      nativeReceiptId: expect.stringContaining(`/${callId}`),
    });
    expect(mock.requests.flatMap((r) => r.turnToolResults).filter((t) => t.includes(QUESTION.question))).toEqual([
      told("SQLite"),
      told("PostgreSQL"),
      told("SQLite"),
    ]);
  });

  it("rule 39: the owner dismisses the question in the TUI (Esc); the lead's answer is unconfirmed / answered_concurrently_by_owner and never reaches the model", async () => {
    const { requestId, server, auth } = await askAgain("choose then dismiss");
    const pane = fleet.panes().find((p) => p.hire !== "" && !p.dead)!.paneId;
    const screen = () =>
      execFileSync("tmux", ["-S", fleet.tmuxSocket, "capture-pane", "-p", "-t", pane], { encoding: "utf8" });
    await until(() => screen().includes(QUESTION.question) || undefined, "the TUI to show the question");
    execFileSync("tmux", ["-S", fleet.tmuxSocket, "send-keys", "-t", pane, "Escape"]);
    const pendingNow = async () =>
      (
        (await (await fetch(`${server}/question`, { headers: { authorization: auth } })).json()) as { id: string }[]
      ).some((q) => q.id === requestId);
    await until(
      async () => !(await pendingNow()) || undefined,
      `the owner's dismissal in the TUI to be taken (screen: ${screen()})`,
      100,
    );
    const marker = `Lead-${Date.now()}`;
    const answered = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { q1: { answers: [marker] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "unconfirmed",
      reason: "answered_concurrently_by_owner",
      requestId,
    });
    expect(mock.requests.some((r) => JSON.stringify(r).includes(marker))).toBe(false);
  });
});
