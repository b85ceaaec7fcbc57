/**
 * A worker answers back from a real harness (rule 48, scenario 22): a real Codex TUI in a tmux
 * pane, discovered as a seat by the node agent, loads the worker-side MCP server
 * (`clankie worker mcp`). The lead messages the seat; the mock model answers with a
 * message_clankie tool call; the agent proves from the kernel that the caller runs in the
 * seat's pane, the controller returns the binding, the message is stored, and the hiring lead
 * reads it with worker_reports. The controller's gateway loses exact worker-link calls at a
 * fault point the test arms (test/kit/worker-call-faults.ts), as a cut agent link would: the
 * agent sees a transport failure, never a typed refusal. That gives a lost request (claim kept,
 * only reconciled), a different text waiting on it, the exact not_sent that releases the
 * claim, and a lost answer after the report was stored (reconciled as stored, never stored
 * twice); for peers, a lost send holds the pane's one peer claim. A worker MCP server outside
 * any pane gets no binding and writes nothing; one with no agent to reach is not sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore } from "../kit/test-db.js";
import { assertBuilt, CLI } from "../kit/cli.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import {
  startMockResponsesServer,
  type MockResponsesServer,
  type RecordedRequest,
} from "../fixtures/mock-responses-server.js";
import { workerCallFaults, type WorkerCallFaults } from "../kit/worker-call-faults.js";
import { create } from "@bufbuild/protobuf";
import { SetPeerMessagesRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { ownerOf } from "../kit/owner.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";
const REPORT = "worker report: the tests pass";
const ASK = "report back: ";
const PEER = "peer peerbox: ";
const LIST = "list your peers";

describe("a real Codex worker answers its lead with message_clankie through `clankie worker mcp`", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let tmuxSock: string;
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let controller: RunningController;
  let agent: RunningAgent;
  let lead: LeadClient;
  let agentStateDir: string;
  let faults: WorkerCallFaults;
  let seat: { id: string; name: string } | undefined;
  const claimFiles = () => {
    const dir = join(agentStateDir, "worker", "claims");
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  /** The lead asks the seat to report TEXT; resolves with the tool output Codex got back. */
  const askReport = (text: string) => ask(ASK + text);
  const ask = async (prompt: string): Promise<Record<string, unknown>> => {
    // Only this ask's turn counts: the same prompt may have been asked before.
    const before = new Set(mock.requests);
    // Under load the freshness gate may refuse a send (a definite not-sent): sending again is then allowed.
    let sent = await lead.call("message_seat", { seat: seat!.name, message: prompt });
    for (let i = 0; i < 100 && sent.structuredContent?.reason === "proof_stale"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      sent = await lead.call("message_seat", { seat: seat!.name, message: prompt });
    }
    expect(sent.structuredContent, JSON.stringify(sent.structuredContent)).toMatchObject({ outcome: "delivered" });
    const answered: RecordedRequest = await mock.waitFor(
      (r) => !before.has(r) && r.turnToolOutputs.length > 0 && r.userTexts.at(-1) === prompt,
    );
    const out = answered.turnToolOutputs.at(-1)!.output;
    return JSON.parse(out.match(/\{.*\}/s)?.[0] ?? "{}") as Record<string, unknown>;
  };
  const reportTexts = async () =>
    ((await lead.call("worker_reports", { limit: 100 })).structuredContent!.reports as { text: string }[]).map(
      (r) => r.text,
    );

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    assertBuilt();
    mock = await startMockResponsesServer({
      reply: "reported",
      // "report back: TEXT" from the lead → the model calls message_clankie{text: TEXT}.
      // "peer peerbox: TEXT" → message_peer{seat: "peerbox", text: TEXT}; "list your peers" → list_fleet_seats.
      toolCall: (r) => {
        if (r.lastUserText.startsWith(ASK))
          return { name: "mcp__clankie/message_clankie", arguments: { text: r.lastUserText.slice(ASK.length) } };
        if (r.lastUserText.startsWith(PEER))
          return {
            name: "mcp__clankie/message_peer",
            arguments: { seat: "peerbox", text: r.lastUserText.slice(PEER.length) },
          };
        if (r.lastUserText === LIST) return { name: "mcp__clankie/list_fleet_seats", arguments: {} };
        return undefined;
      },
    });
    cx = makeCodexEnv(bin, mock.baseUrl);
    store = await prepareStore("pglite");
    agentStateDir = join(store.stateDir, "agent");
    appendFileSync(
      join(cx.codexHome, "config.toml"),
      [
        "",
        "[mcp_servers.clankie]",
        `command = ${JSON.stringify(process.execPath)}`,
        `args = ${JSON.stringify([CLI, "worker", "mcp", "--agent-state-dir", agentStateDir])}`,
        "required = true",
        'default_tools_approval_mode = "approve"',
        "",
      ].join("\n"),
    );
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
    faults = workerCallFaults();
    controller = await startController(
      compileControllerConfig({
        stateDir: store.stateDir,
        port: 0,
        databaseUrl: store.databaseUrl,
        heartbeatIntervalMs: 1000,
      }),
      silentLogger,
      { faults },
    );
    agent = await startAgent(
      {
        ...compileAgentConfig({
          stateDir: agentStateDir,
          controllerUrl: controller.agentUrl,
          machine: "workbox",
          paneHost: "tmux",
          tmuxSocket: tmuxSock,
          statusRefreshMs: 300,
        }),
        joinToken: await controller.issueJoinToken("workbox"),
      },
      silentLogger,
    );
    await agent.linked;
    lead = await connectLead(controller.mcpUrl, controller.leadToken);
  });

  afterAll(async () => {
    await lead?.close();
    await agent?.close();
    await controller?.close();
    try {
      execFileSync(TMUX, ["-S", tmuxSock, "kill-server"], { stdio: "ignore" });
    } catch {
      // already gone
    }
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
    await store?.cleanup();
  });

  it("the lead messages the Codex seat, the worker calls message_clankie from its pane, and the lead reads the stored report", async () => {
    for (let i = 0; i < 600 && !seat; i++) {
      const seats = ((await lead.call("list_seats", {})).structuredContent?.seats ?? []) as {
        id: string;
        name: string;
        kind: string;
        inputCapabilities: { deliveryModes: string[] };
      }[];
      seat = seats.find((s) => s.kind === "codex" && s.inputCapabilities.deliveryModes.length > 0);
      if (!seat) await new Promise((r) => setTimeout(r, 100));
    }
    expect(seat).toBeDefined();
    const receipt = await askReport(REPORT);
    expect(receipt).toMatchObject({
      received: true,
      deliveryStage: "stored",
      deliveryId: expect.any(String),
      binding: expect.any(String),
    });
    const reports = (await lead.call("worker_reports", {})).structuredContent?.reports as {
      deliveryId: string;
      seat: string;
      text: string;
      unadopted: boolean;
    }[];
    expect(reports).toEqual([
      expect.objectContaining({ deliveryId: receipt.deliveryId, seat: seat!.id, text: REPORT, unadopted: false }),
    ]);
    // Settled: the pane's claim is released.
    expect(claimFiles()).toEqual([]);
  });

  it("rule 48: a lost request keeps the pane's claim; a different text waits while the original is unresolved; the reconcile's exact not_sent releases it and the next text carries it as previous", async () => {
    // The send is lost before the controller acts, as on a cut link: the worker cannot know, so it holds the claim.
    const cut = faults.arm((c) => c.op === "worker_send" && c.text === "lost-answer-report", "request");
    const lost = await askReport("lost-answer-report");
    expect((await cut).id).toBe(lost.deliveryId);
    expect(lost).toMatchObject({ received: false, deliveryStage: "uncertain", deliveryId: expect.any(String) });
    const originalId = lost.deliveryId as string;
    expect(claimFiles()).toHaveLength(1);

    // The reconcile of the original (its status request carries its id) is lost too: the new text waits, nothing is sent.
    const cutAgain = faults.arm((c) => c.op === "worker_status" && c.id === originalId, "request");
    const waiting = await askReport("second-report");
    await cutAgain;
    expect(waiting).toMatchObject({ received: false, deliveryStage: "uncertain", deliveryId: originalId });
    expect(String(waiting.detail)).toContain("waits");
    expect(claimFiles()).toHaveLength(1);

    // Reachable again: the original is settled as never received (for good), the claim released, the new text stored.
    const third = await askReport("third-report");
    expect(third).toMatchObject({
      received: true,
      deliveryStage: "stored",
      previous: { deliveryId: originalId, deliveryStage: "not_sent" },
    });
    expect(third.deliveryId).not.toBe(originalId);
    expect(claimFiles()).toEqual([]);
    const texts = await reportTexts();
    expect(texts).toContain("third-report");
    expect(texts).not.toContain("lost-answer-report");
    expect(texts).not.toContain("second-report");
  });

  it("rule 48: an answer lost after the report was stored is reconciled as stored, never stored twice; the claim is released and the next text goes out with no previous", async () => {
    const cut = faults.arm((c) => c.op === "worker_send" && c.text === "stored-but-answer-lost", "answer");
    const lost = await askReport("stored-but-answer-lost");
    await cut;
    expect(lost).toMatchObject({ received: false, deliveryStage: "uncertain", deliveryId: expect.any(String) });
    expect(claimFiles()).toHaveLength(1);
    // The same text again only reconciles: the original was stored, so it is reported, not resent.
    const same = await askReport("stored-but-answer-lost");
    expect(same).toMatchObject({ received: true, deliveryStage: "stored", deliveryId: lost.deliveryId });
    expect(claimFiles()).toEqual([]);
    const next = await askReport("after-the-lost-answer");
    expect(next).toMatchObject({ received: true, deliveryStage: "stored" });
    expect(next.previous).toBeUndefined();
    const texts = await reportTexts();
    expect(texts.filter((t) => t === "stored-but-answer-lost")).toHaveLength(1);
    expect(texts).toContain("after-the-lost-answer");
  });

  it("rules 27–28 and 49, scenarios 23–24: peers: off by default (typed refusal); once the owner turns them on the Codex worker lists its fleet and messages a mailbox seat once, with no lead authority; a lost peer answer holds the pane's one peer claim and a new text waits", async () => {
    await ownerOf(controller.url, controller.ownerToken).addMailbox("peerbox");
    const peerbox = () => new MailboxStore(join(agentStateDir, "mailboxes")).list("peerbox").entries;
    const off = await ask(PEER + "while peers are off");
    expect(off).toMatchObject({ outcome: "undelivered", reason: "peers_off" });
    expect(peerbox()).toEqual([]);

    expect(
      (
        await ownerOf(controller.url, controller.ownerToken).owner.setPeerMessages(
          create(SetPeerMessagesRequestSchema, { enabled: true }),
        )
      ).enabled,
    ).toBe(true);
    const listed = await ask(LIST);
    expect((listed.seats as { seatId: string }[]).map((x) => x.seatId)).toContain("workbox/peerbox");
    expect((listed.seats as { seatId: string }[]).map((x) => x.seatId)).not.toContain(seat!.id);

    const sent = await ask(PEER + "hello from codex");
    expect(sent).toMatchObject({ outcome: "delivered", seat: "workbox/peerbox", deliveryId: expect.any(String) });
    expect(peerbox()).toEqual([
      expect.objectContaining({
        deliveryId: sent.deliveryId,
        text: "hello from codex",
        conversationId: `peer:${seat!.id}`,
      }),
    ]);

    // The send is lost before the controller acts: uncertain, the pane's peer claim held; a different text waits and nothing is sent.
    const cut = faults.arm((c) => c.op === "peer_send" && c.text === "peer that is lost", "request");
    const lost = await ask(PEER + "peer that is lost");
    expect((await cut).id).toBe(lost.deliveryId);
    expect(lost).toMatchObject({ outcome: "uncertain", deliveryId: expect.any(String) });
    const waiting = await ask(PEER + "a different peer text");
    expect(waiting).toMatchObject({ outcome: "uncertain", deliveryId: lost.deliveryId });
    expect(peerbox().map((e) => e.text)).toEqual(["hello from codex"]);
  });

  it("a worker MCP server with no agent to reach is not sent (refused connection), and one in no seat's pane gets no binding; neither writes anything", async () => {
    const lonely = new Client({ name: "lonely", version: "0" });
    await lonely.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "worker", "mcp", "--agent-state-dir", join(store.stateDir, "no-agent-here")],
        stderr: "ignore",
      }),
    );
    try {
      const r = await lonely.callTool({ name: "message_clankie", arguments: { text: "nobody listens" } });
      expect(r.structuredContent).toMatchObject({
        received: false,
        deliveryStage: "unavailable",
        definitive: "not_sent",
        reason: "agent_unreachable",
      });
    } finally {
      await lonely.close();
    }
    const client = new Client({ name: "outsider", version: "0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "worker", "mcp", "--agent-state-dir", agentStateDir],
        stderr: "ignore",
      }),
    );
    try {
      const r = await client.callTool({ name: "message_clankie", arguments: { text: "not from a pane" } });
      expect(r.structuredContent).toMatchObject({
        received: false,
        deliveryStage: "unavailable",
        definitive: "not_sent",
        reason: "not_in_a_seat_pane",
      });
      const reports = (await lead.call("worker_reports", {})).structuredContent?.reports as { text: string }[];
      expect(reports.filter((x) => x.text === "not from a pane")).toEqual([]);
      expect(claimFiles()).toEqual([]);
      expect((await reportTexts()).filter((t) => t === "nobody listens")).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
