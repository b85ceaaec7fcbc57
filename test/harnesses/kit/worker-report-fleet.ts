/**
 * A fleet for the worker-answers-back suites (rule 48, scenario 22) on Claude Code, OpenCode
 * and Pi: a controller with fault points a test arms per call, an in-process node agent
 * watching the harness's private tmux server, and the lead. The lead asks a seat to report;
 * the harness's mock model answers with a message_clankie tool call; the helper returns what
 * the tool answered the model, read from the mock's next request.
 */
import { join } from "node:path";
import { expect } from "vitest";
import { compileControllerConfig } from "../../../controller/config.js";
import { startController, type RunningController } from "../../../controller/main.js";
import { compileAgentConfig } from "../../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../../node-agent/main.js";
import { silentLogger } from "../../../shared/logger.js";
import { prepareStore } from "../../kit/test-db.js";
import { CLI } from "../../kit/cli.js";
import { connectLead, type LeadClient } from "../../kit/mcp-client.js";
import { workerCallFaults, type WorkerCallFaults } from "../../kit/worker-call-faults.js";
import type { MockAnthropicServer, MockToolUse, RecordedRequest } from "../../fixtures/mock-anthropic-server.js";

/** "report back: TEXT" from the lead → the model calls message_clankie{text: TEXT}. */
export const ASK = "report back: ";

/** The mock's tool choice: message_clankie under whatever name the harness offers it (mcp__clankie__…, clankie_…, or bare). */
export function reportToolUse(r: RecordedRequest): MockToolUse | undefined {
  const text = askedText(r);
  if (text === undefined) return undefined;
  // One report per turn: a result from message_clankie (it names a delivery) ends the calls.
  if (r.turnToolResults.some((t) => t.includes("deliveryId"))) return undefined;
  const name = r.toolNames.find(
    (n) => n === "message_clankie" || n.endsWith("__message_clankie") || n.endsWith("_message_clankie"),
  );
  // Deferred and listed (Claude Code 2.1.332), the mock loads it through ToolSearch first.
  if (name) return { name, input: { text } };
  // Deferred and not listed where the mock reads the list (the TUI's first turns): load it by Claude's name for it.
  if (r.toolNames.includes("ToolSearch") && r.turnToolResults.length === 0 && !r.latestUserHasToolResult)
    return { name: "ToolSearch", input: { query: "select:mcp__clankie__message_clankie", max_results: 5 } };
  return undefined;
}

/** The TEXT a request's user messages ask to report; a harness may wrap it (Claude's channel tag). */
function askedText(r: RecordedRequest): string | undefined {
  const line = r.latestUserText.split("\n").find((l) => l.startsWith(ASK));
  if (line || !r.latestUserHasToolResult) return line?.slice(ASK.length);
  // Mid-turn: a ToolSearch result came back as a user message with text of its own; the ask is before it.
  for (const t of r.userTexts.slice(0, -1).reverse()) {
    const line = t.split("\n").find((l) => l.startsWith(ASK));
    if (line) return line.slice(ASK.length);
  }
  return undefined;
}

export interface WorkerReportFleet {
  readonly stateDir: string;
  readonly agentStateDir: string;
  readonly controller: RunningController;
  readonly agent: RunningAgent;
  readonly lead: LeadClient;
  readonly faults: WorkerCallFaults;
  /** How the harness starts the worker-side MCP server. */
  readonly workerMcp: { command: string; args: string[] };
  /** Waits for a seat of KIND with live control on this fleet's own machine (workbox), never another agent's. */
  seat(kind: string): Promise<{ id: string; name: string }>;
  /** The lead asks SEAT to report TEXT; resolves with the tool's answer to the model. */
  askReport(seat: string, text: string): Promise<Record<string, unknown>>;
  /** Resolves with the tool's answer to the model once a turn asked to report TEXT has it (after BEFORE). */
  toolAnswer(text: string, before: Set<RecordedRequest>): Promise<Record<string, unknown>>;
  /** The lead messages SEAT (retrying a definite not-sent refusal of a stale or unanswered proof). */
  message(seat: string, text: string): Promise<Record<string, unknown>>;
  reports(): Promise<{ deliveryId: string; seat: string; text: string; unadopted: boolean }[]>;
  close(): Promise<void>;
}

/** The store and agent state come first: a harness may need the agent's folders before it starts. */
export async function prepareWorkerReportStore(): Promise<{
  stateDir: string;
  agentStateDir: string;
  workerMcp: { command: string; args: string[] };
  cleanup: () => Promise<void>;
  databaseUrl: string | undefined;
}> {
  const store = await prepareStore("pglite");
  const agentStateDir = join(store.stateDir, "agent");
  return {
    ...store,
    agentStateDir,
    workerMcp: { command: process.execPath, args: [CLI, "worker", "mcp", "--agent-state-dir", agentStateDir] },
  };
}

export async function startWorkerReportFleet(
  store: Awaited<ReturnType<typeof prepareWorkerReportStore>>,
  mock: MockAnthropicServer,
  tmuxSocket: string,
  controllerOptions: { deliverTimeoutMs?: number } = {},
): Promise<WorkerReportFleet> {
  const faults = workerCallFaults();
  const controller = await startController(
    compileControllerConfig({
      stateDir: store.stateDir,
      port: 0,
      databaseUrl: store.databaseUrl,
      heartbeatIntervalMs: 1000,
      ...controllerOptions,
    }),
    silentLogger,
    { faults },
  );
  const agent = await startAgent(
    {
      ...compileAgentConfig({
        stateDir: store.agentStateDir,
        controllerUrl: controller.agentUrl,
        machine: "workbox",
        paneHost: "tmux",
        tmuxSocket,
        statusRefreshMs: 300,
      }),
      joinToken: await controller.issueJoinToken("workbox"),
    },
    silentLogger,
  );
  await agent.linked;
  const lead = await connectLead(controller.mcpUrl, controller.leadToken);
  const fleet: WorkerReportFleet = {
    stateDir: store.stateDir,
    agentStateDir: store.agentStateDir,
    controller,
    agent,
    lead,
    faults,
    workerMcp: store.workerMcp,
    async seat(kind) {
      for (let i = 0; i < 900; i++) {
        const seats = ((await lead.call("list_seats", {})).structuredContent?.seats ?? []) as {
          id: string;
          name: string;
          kind: string;
          inputCapabilities: { deliveryModes: string[] };
        }[];
        // A test may join other machines; list_seats orders by id, so "far/…" would come first.
        const s = seats.find(
          (x) => x.kind === kind && x.id.startsWith("workbox/") && x.inputCapabilities.deliveryModes.length > 0,
        );
        if (s) return s;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`no ${kind} seat with live control appeared`);
    },
    async message(seat, message) {
      // Under load the freshness gate may refuse a send, or a proof go unanswered (a definite not-sent): sending again is then allowed.
      let sent = await lead.call("message_seat", { seat, message });
      for (
        let i = 0;
        i < 100 &&
        ["proof_stale", "proof_unknown"].includes(String(sent.structuredContent?.reason)) &&
        sent.structuredContent?.outcome === "undelivered";
        i++
      ) {
        await new Promise((r) => setTimeout(r, 200));
        sent = await lead.call("message_seat", { seat, message });
      }
      expect(sent.structuredContent, JSON.stringify(sent.structuredContent)).toMatchObject({ outcome: "delivered" });
      return sent.structuredContent!;
    },
    async toolAnswer(text, before) {
      for (let i = 0; i < 600; i++) {
        const answered = mock.requests.find(
          (r) => !before.has(r) && askedText(r) === text && r.turnToolResults.some((t) => t.includes("deliveryId")),
        );
        if (answered)
          return JSON.parse(
            [...answered.turnToolResults]
              .reverse()
              .find((t) => t.includes("deliveryId"))!
              .match(/\{.*\}/s)?.[0] ?? "{}",
          ) as Record<string, unknown>;
        await new Promise((r) => setTimeout(r, 100));
      }
      const seen = mock.requests
        .filter((r) => !before.has(r))
        .map((r) => ({
          last: r.latestUserText,
          tools: r.toolNames.filter((n) => n.includes("clankie")),
          results: r.turnToolResults,
        }));
      throw new Error(
        `the model never got message_clankie's answer for ${JSON.stringify(text)}; requests since: ${JSON.stringify(seen)}`,
      );
    },
    async askReport(seat, text) {
      const before = new Set(mock.requests);
      await fleet.message(seat, ASK + text);
      return fleet.toolAnswer(text, before);
    },
    async reports() {
      return ((await lead.call("worker_reports", { limit: 100 })).structuredContent?.reports ?? []) as {
        deliveryId: string;
        seat: string;
        text: string;
        unadopted: boolean;
      }[];
    },
    async close() {
      await lead.close();
      await agent.close();
      await controller.close();
      await store.cleanup();
    },
  };
  return fleet;
}
