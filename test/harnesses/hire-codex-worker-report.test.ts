/**
 * A hired Codex answers back and asks (issue 12 item 5; issue 13 parts 2 and 4; rules 35, 39,
 * 48; ADR 0040 addendum "A private app-server per hired Codex"). hire_agent launches the real
 * Codex (pinned) in a new tmux pane with its own `codex app-server --listen unix://SOCK` in the
 * pane's process tree and the TUI on `--remote unix://SOCK`; the server carries the hire's
 * config: the worker MCP server (`clankie worker mcp`, no token), `model`, `effort`, and the
 * question feature. The mock model answers the brief with a message_clankie tool call: the report is
 * stored for the hiring conversation only, the brief reached the model once, with the hire's
 * model and effort. A replay starts nothing; message_seat arrives. A question (Codex's native
 * request_user_input) reaches the hiring lead, whose message_seat{questionAnswer} is Codex's
 * reply. The census sees the private app-server by the hire marker. The test sets the owner's
 * explicit hire option workerToolApproval: "approve" (docs/hire-agent.md).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { assertBuilt } from "../kit/cli.js";
import { allPids, readCmdline, readStat, isFailure } from "../../node-agent/proofs/linux-read.js";
import { requireHarness } from "./kit/harness-bin.js";
import { codexHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";
import { askedIn, expectReportOnlyFor } from "./kit/hire-report.js";
import { ASK } from "./kit/worker-report-fleet.js";
import { reportsOf } from "../kit/worker-reports.js";
import { until } from "../kit/until.js";

const bin = requireHarness("codex");
const META = "clankie/seat-call";
const TEXT = "hired codex report: done";
const QASK = "[ask]";
const QUESTION = {
  id: "colour",
  header: "Colour",
  question: "Which colour should the button be?",
  options: [
    { label: "Red", description: "warm" },
    { label: "Blue", description: "cool" },
  ],
};

const argvOf = (pid: number) => {
  const a = readCmdline(pid);
  return isFailure(a) ? [] : a;
};
const parentOf = (pid: number) => {
  const s = readStat(pid);
  return isFailure(s) ? -1 : s.ppid;
};
const ancestorsOf = (pid: number) => {
  const out: number[] = [];
  for (let p = parentOf(pid); p > 1 && out.length < 64; p = parentOf(p)) out.push(p);
  return out;
};

describe("a hired Codex on its own app-server reports, asks, and is answered by its hiring lead", () => {
  let mock: MockResponsesServer;
  let env: HireEnv;
  let fleet: HireFleet;
  let hiring: LeadClient;
  let other: LeadClient;
  let body: Record<string, unknown>;
  let seat: string;
  const hireId = randomUUID();
  let args: Record<string, unknown>;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    assertBuilt();
    mock = await startMockResponsesServer({
      reply: "ok",
      toolCall: (r) => {
        const asked = askedIn(r.lastUserText);
        if (asked !== undefined) return { name: "mcp__clankie/message_clankie", arguments: { text: asked } };
        if (r.lastUserText.includes(QASK) && r.toolNames.includes("request_user_input"))
          return { name: "request_user_input", arguments: { questions: [QUESTION] } };
        return undefined;
      },
    });
    env = codexHireEnv(bin, mock.baseUrl);
    env.hire.workerToolApproval = "approve";
    fleet = await startHireFleet("pglite", { hire: env.hire });
    hiring = await fleet.leadFor("hiring-lead");
    other = await fleet.leadFor("other-lead");
    args = {
      harness: "codex",
      workingDirectory: env.work,
      title: "codex reporter",
      role: "reporter",
      brief: ASK + TEXT,
      model: "mock-model-b",
      effort: "high",
    };
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

  it("issue 12 item 2: spawned with the private app-server proven in the pane's tree; the brief reached the model once, with the hire's model and effort", async () => {
    const res = await hiring.call("hire_agent", args, { [META]: { hireId } });
    body = res.structuredContent as Record<string, unknown>;
    expect(body, JSON.stringify(body)).toMatchObject({
      outcome: "spawned",
      hireId,
      harness: "codex",
      launchCommitted: true,
    });
    seat = body.seat as string;
    const proofs = body.proofs as { kind: string; outcome: string }[];
    expect(proofs.find((p) => p.kind === "private_app_server")).toMatchObject({ outcome: "proven" });
    expect(proofs.every((p) => p.outcome === "proven")).toBe(true);
    const briefed = await mock.waitFor((r) => askedIn(r.lastUserText) === TEXT);
    expect(briefed.reasoningEffort).toBe("high");
    expect(briefed.model).toBe("mock-model-b");
    expect(briefed.toolNames).toEqual(expect.arrayContaining(["mcp__clankie/message_clankie", "request_user_input"]));
    expect(mock.maxCopiesInOneRequest(ASK + TEXT)).toBe(1);
  });

  it("issue 12 item 5, rule 48: the brief turn's message_clankie is stored under the hired seat for the hiring conversation only", async () => {
    const answered = await mock.waitFor((r) => askedIn(r.lastUserText) === TEXT && r.turnToolOutputs.length > 0);
    const receipt = JSON.parse(answered.turnToolOutputs.at(-1)!.output.match(/\{.*\}/s)?.[0] ?? "{}") as Record<
      string,
      unknown
    >;
    await expectReportOnlyFor({ hiring, others: [fleet.lead, other], seat }, TEXT, receipt);
  });

  it("ADR 0040 addendum: the pane runs the app-server and the TUI on its socket; the worker server is the app-server's child; no account daemon; the census sees the server by the hire marker", () => {
    const marked = fleet.markedProcesses(hireId);
    const server = marked.find(
      (p) => argvOf(p).slice(1, 3).join(" ") === "app-server --listen" && /codex$/.test(argvOf(p)[0] ?? ""),
    );
    const tui = marked.find((p) => argvOf(p)[1] === "--remote" && /codex$/.test(argvOf(p)[0] ?? ""));
    expect(server, JSON.stringify(marked.map(argvOf))).toBeDefined();
    expect(tui).toBeDefined();
    const sock = argvOf(server!)[3]!;
    expect(argvOf(tui!)[2]).toBe(sock);
    // Both are in the pane the hire opened: the pane's process is a common ancestor.
    const pane = fleet.panes().find((p) => p.hire === hireId)!;
    expect(pane.paneId).toBe(body.paneId);
    const common = ancestorsOf(server!).filter((p) => ancestorsOf(tui!).includes(p));
    expect(common.some((p) => argvOf(p).some((a) => a.endsWith("codex/pane-runner.js")))).toBe(true);
    // Codex clears an MCP server's environment (no marker), so the worker server is found by its ancestry.
    const worker = allPids().find(
      (p) => argvOf(p).includes("worker") && argvOf(p).includes("mcp") && ancestorsOf(p).includes(server!),
    );
    expect(worker, "the worker MCP server runs under the hire's own app-server").toBeDefined();
    expect(marked.some((p) => argvOf(p).includes("--managed-daemon"))).toBe(false);
  });

  it("the same hireId again returns the original result and starts nothing; message_seat to the seat arrives", async () => {
    const roots = fleet.launchedRoots(hireId);
    const again = await hiring.call("hire_agent", args, { [META]: { hireId } });
    expect(again.structuredContent).toMatchObject({ outcome: "spawned", hireId, seat });
    expect(fleet.panes().filter((p) => p.hire === hireId)).toHaveLength(1);
    expect(fleet.launchedRoots(hireId)).toEqual(roots);
    const text = `followup-${hireId.slice(0, 8)}`;
    let res;
    for (let i = 0; i < 60; i++) {
      res = await hiring.call("message_seat", { seat, message: text });
      if ((res.structuredContent as { outcome?: string }).outcome === "delivered") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(res!.structuredContent, JSON.stringify(res!.structuredContent)).toMatchObject({ outcome: "delivered" });
    await mock.waitFor((r) => r.lastUserText.includes(text));
    expect(mock.maxCopiesInOneRequest(text)).toBe(1);
  });

  it("issue 13 part 4, rules 35 and 39: the hired Codex's question reaches the hiring lead only, and its questionAnswer is Codex's reply", async () => {
    const seatName = seat.split("/")[1]!;
    await until(
      () => fleet.agent.watchingQuestions(seatName),
      "the agent's question desk to watch the hired seat's thread",
      300,
    );
    const ask = await hiring.call("message_seat", { seat, message: `${QASK} pick a colour` });
    expect(ask.structuredContent, JSON.stringify(ask.structuredContent)).toMatchObject({ outcome: "delivered" });
    const report = await until(
      async () => (await reportsOf(hiring)).find((x) => x.text.startsWith("Question from seat")),
      "the question to reach the hiring lead",
    );
    expect(report.text).toContain(QUESTION.question);
    expect((await reportsOf(other)).some((x) => x.deliveryId === report.deliveryId)).toBe(false);
    const requestId = /requestId ([^;]+);/.exec(report.text)![1]!;
    const answered = await hiring.call("message_seat", {
      seat,
      questionAnswer: { requestId, answers: { colour: { answers: ["Blue"] } } },
    });
    expect(answered.structuredContent, JSON.stringify(answered.structuredContent)).toMatchObject({
      outcome: "delivered",
      requestId,
    });
    await mock.waitFor((q) => q.turnToolOutputs.some((o) => o.output.includes('"colour"')));
    const outputs = mock.requests.flatMap((r) => r.turnToolOutputs).filter((o) => o.output.includes('"colour"'));
    expect(outputs.map((o) => JSON.parse(o.output))).toEqual([{ answers: { colour: { answers: ["Blue"] } } }]);
  });
});
