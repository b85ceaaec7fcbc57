/**
 * A hire of the real Codex through Herdr's agent.start answers back too (issue 12 items 2 and
 * 5; rules 48, 52; ADR 0040 addendum "a private app-server per hired Codex", its Herdr part), on
 * the fake Herdr whose panes are real terminals (test/kit/fake-herdr-terminals.ts). agent.start
 * runs only the kind's binary with arguments and no environment, so the agent itself starts the
 * hire's private `codex app-server --listen unix://SOCK -c …` (the worker server, model, effort,
 * question feature; the hire marker; the owner's CODEX_HOME), records its exact lifetime in the
 * host journal, and agent.start runs `codex --remote unix://SOCK -C DIR`. private_app_server is
 * proven in its Herdr form; the brief reaches the model once with the hire's effort; the brief
 * turn's message_clankie reaches the hiring conversation only; a replay starts nothing;
 * message_seat arrives; a question (request_user_input) is answered by the hiring lead; a restarted agent keeps the server (from the journal) and still controls
 * the seat; after the pane closes the agent stops the server and no hire process is left.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { startFakeHerdr, type FakeHerdr } from "../kit/fake-herdr.js";
import { startHerdrTerminals, type HerdrTerminals } from "../kit/fake-herdr-terminals.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { assertBuilt } from "../kit/cli.js";
import { HerdrConnection, TYPING_METHODS } from "../../node-agent/panes/herdr-client.js";
import { allPids, isFailure, readCmdline, readEnviron, readStat } from "../../node-agent/proofs/linux-read.js";
import type { HostHireRecord } from "../../node-agent/hire/host-journal.js";
import { requireHarness } from "./kit/harness-bin.js";
import { codexHireEnv, type HireEnv } from "./kit/hire-envs.js";
import { cleanupCodexEnv } from "./kit/codex-env.js";
import { askedIn, expectReportOnlyFor } from "./kit/hire-report.js";
import { ASK } from "./kit/worker-report-fleet.js";
import { reportsOf } from "../kit/worker-reports.js";
import { until as waitUntil, type Probe } from "../kit/until.js";

const bin = requireHarness("codex");
const META = "clankie/seat-call";
const TEXT = "herdr codex report: done";
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
const startOf = (pid: number) => {
  const s = readStat(pid);
  return isFailure(s) ? undefined : s.startTicks;
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
/** Processes Herdr started in the pane (every one carries the pane's HERDR_PANE_ID and socket). */
const paneProcesses = (paneId: string, socket: string) =>
  allPids().filter((pid) => {
    const env = readEnviron(pid);
    return !isFailure(env) && env.get("HERDR_PANE_ID") === paneId && env.get("HERDR_SOCKET_PATH") === socket;
  });

const until = <T>(probe: Probe<T>, what: string, tries = 300): Promise<T> => waitUntil(probe, what, tries);

describe.runIf(bin)(
  "issue 12 item 5 on Herdr: a hired Codex on the agent-started private app-server reports to its hiring lead",
  () => {
    let mock: MockResponsesServer;
    let env: HireEnv;
    let terminals: HerdrTerminals;
    let herdr: FakeHerdr;
    let fleet: HireFleet;
    let hiring: LeadClient;
    let other: LeadClient;
    const hireId = randomUUID();
    let args: Record<string, unknown>;
    let body: Record<string, unknown>;
    let seat = "";
    let paneId = "";
    const journal = () =>
      JSON.parse(
        readFileSync(join(fleet.agentStateDir, "hires", `${hireId.toLowerCase()}.json`), "utf8"),
      ) as HostHireRecord;
    const deliver = async (text: string) => {
      let res;
      for (let i = 0; i < 60; i++) {
        res = await hiring.call("message_seat", { seat, message: text });
        if ((res.structuredContent as { outcome?: string }).outcome === "delivered") break;
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(res!.structuredContent, JSON.stringify(res!.structuredContent)).toMatchObject({ outcome: "delivered" });
      await mock.waitFor((r) => r.lastUserText.includes(text));
      expect(mock.maxCopiesInOneRequest(text)).toBe(1);
    };

    beforeAll(async () => {
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
      env = codexHireEnv(bin!, mock.baseUrl);
      env.hire.workerToolApproval = "approve";
      terminals = startHerdrTerminals();
      herdr = await startFakeHerdr({ terminals });
      fleet = await startHireFleet("pglite", { herdrSocket: herdr.socketPath, hire: env.hire });
      // The owner's Herdr Codex integration: the same CODEX_HOME the agent's hire environment names.
      herdr.integrate("codex", { bin: bin!, env: env.hire.env! });
      hiring = await fleet.leadFor("hiring-lead");
      other = await fleet.leadFor("other-lead");
      args = {
        harness: "codex",
        workingDirectory: env.work,
        title: "herdr codex reporter",
        role: "reporter",
        brief: ASK + TEXT,
        model: "mock-model-b",
        effort: "high",
      };
    });
    afterAll(async () => {
      // Nothing of the hire may outlive the suite, whatever failed above.
      for (const pid of fleet ? fleet.markedProcesses(hireId) : []) process.kill(pid, "SIGKILL");
      await fleet?.close();
      await herdr?.close();
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

    it("issue 12 item 2, ADR 0040 addendum: spawned with private_app_server proven (Herdr form); agent.start runs only the TUI on the recorded socket; the brief reached the model once with the hire's model and effort", async () => {
      const res = await hiring.call("hire_agent", args, { [META]: { hireId } });
      body = res.structuredContent as Record<string, unknown>;
      expect(body, JSON.stringify(body)).toMatchObject({
        outcome: "spawned",
        hireId,
        harness: "codex",
        launchCommitted: true,
      });
      seat = body.seat as string;
      paneId = body.paneId as string;
      const proofs = body.proofs as { kind: string; outcome: string; detail: string }[];
      expect(
        proofs.find((p) => p.kind === "private_app_server"),
        JSON.stringify(proofs),
      ).toMatchObject({ outcome: "proven", detail: expect.stringContaining("only client") });
      expect(
        proofs.every((p) => p.outcome === "proven"),
        JSON.stringify(proofs),
      ).toBe(true);
      const server = journal().codexServer!;
      expect(server).toMatchObject({
        pid: expect.any(Number),
        startTime: expect.any(Number),
        socketPath: expect.any(String),
      });
      expect(herdr.calls.find((c) => c.method === "agent.start")!.params).toMatchObject({
        kind: "codex",
        pane_id: paneId,
        args: ["--remote", `unix://${server.socketPath}`, "-C", env.work],
      });
      const briefed = await mock.waitFor((r) => askedIn(r.lastUserText) === TEXT);
      expect(briefed.reasoningEffort).toBe("high");
      expect(briefed.model).toBe("mock-model-b");
      expect(briefed.toolNames).toEqual(expect.arrayContaining(["mcp__clankie/message_clankie"]));
      expect(mock.maxCopiesInOneRequest(ASK + TEXT)).toBe(1);
    });

    it("issue 12 item 5, rule 48: the brief turn's message_clankie is stored under the Herdr seat for the hiring conversation only", async () => {
      const answered = await mock.waitFor((r) => askedIn(r.lastUserText) === TEXT && r.turnToolOutputs.length > 0);
      const receipt = JSON.parse(answered.turnToolOutputs.at(-1)!.output.match(/\{.*\}/s)?.[0] ?? "{}") as Record<
        string,
        unknown
      >;
      await expectReportOnlyFor({ hiring, others: [fleet.lead, other], seat }, TEXT, receipt);
    });

    it("ADR 0040 addendum: the server is the lifetime the journal recorded, carries the hire marker, runs outside the pane's tree and hosts the worker server; the pane runs the TUI on its socket", () => {
      const server = journal().codexServer!;
      expect(startOf(server.pid)).toBe(server.startTime);
      expect(argvOf(server.pid).slice(1, 4)).toEqual(["app-server", "--listen", `unix://${server.socketPath}`]);
      expect(fleet.markedProcesses(hireId)).toContain(server.pid);
      const inPane = paneProcesses(paneId, herdr.socketPath);
      const tui = inPane.find((p) => argvOf(p).includes(`unix://${server.socketPath}`));
      expect(tui, JSON.stringify(inPane.map(argvOf))).toBeDefined();
      expect(inPane.some((p) => ancestorsOf(server.pid).includes(p))).toBe(false);
      expect(inPane).not.toContain(server.pid);
      const worker = allPids().find(
        (p) => argvOf(p).includes("worker") && argvOf(p).includes("mcp") && ancestorsOf(p).includes(server.pid),
      );
      expect(worker, "the worker MCP server runs under the hire's own app-server").toBeDefined();
      expect(herdr.calls.filter((c) => TYPING_METHODS.includes(c.method))).toEqual([]);
    });

    it("rule 52: the same hireId again returns the original result and starts nothing; message_seat to the Herdr seat arrives", async () => {
      const roots = fleet.launchedRoots(hireId);
      const again = await hiring.call("hire_agent", args, { [META]: { hireId } });
      expect(again.structuredContent).toEqual(body);
      expect(herdr.calls.filter((c) => c.method === "pane.split")).toHaveLength(1);
      expect(herdr.calls.filter((c) => c.method === "agent.start")).toHaveLength(1);
      expect(fleet.launchedRoots(hireId)).toEqual(roots);
      await deliver(`followup-${hireId.slice(0, 8)}`);
    });

    it("issue 13 part 4 on Herdr: the question feature the server carries reaches the hiring lead only, and its questionAnswer is Codex's reply", async () => {
      const seatName = seat.split("/")[1]!;
      await until(
        () => fleet.agent.watchingQuestions(seatName),
        "the agent's question desk to watch the Herdr seat's thread",
      );
      const ask = await hiring.call("message_seat", { seat, message: `${QASK} pick a colour` });
      expect(ask.structuredContent, JSON.stringify(ask.structuredContent)).toMatchObject({ outcome: "delivered" });
      const report = await until(
        async () => (await reportsOf(hiring)).find((x) => x.text.startsWith("Question from seat")),
        "the question to reach the hiring lead",
        600,
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
    });

    it("lifecycle: a restarted agent keeps the server it re-derives from the host journal, and the seat is still controlled through it", async () => {
      const server = journal().codexServer!;
      await fleet.restartAgent();
      await new Promise((r) => setTimeout(r, 3000));
      expect(startOf(server.pid)).toBe(server.startTime);
      expect(journal().codexServer!.stoppedAtMs).toBeUndefined();
      await deliver(`after-restart-${hireId.slice(0, 8)}`);
    });

    it("lifecycle: after the Herdr pane closes the agent stops the hire's server (and its worker server); no hire process is left", async () => {
      const server = journal().codexServer!;
      const workers = allPids().filter((p) => ancestorsOf(p).includes(server.pid));
      expect(workers.length).toBeGreaterThan(0);
      const c = await HerdrConnection.open(herdr.socketPath);
      if (!c.ok) throw new Error(c.message);
      expect((await c.connection.call("pane.close", { pane_id: paneId })).ok).toBe(true);
      c.connection.close();
      await until(
        () => journal().codexServer!.stoppedAtMs !== undefined,
        "the agent to stop the hire's app-server",
        300,
      );
      expect(startOf(server.pid)).toBeUndefined();
      await until(() => workers.every((p) => startOf(p) === undefined), "the server's children to end", 100);
      expect(fleet.markedProcesses(hireId)).toEqual([]);
      expect(paneProcesses(paneId, herdr.socketPath)).toEqual([]);
    });
  },
);
