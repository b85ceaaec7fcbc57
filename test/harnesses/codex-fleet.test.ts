/**
 * The whole path with a real Codex: a lead's MCP call → controller (receipt) → node agent
 * (started with `paneHost: tmux`) → the Codex TUI running in a real tmux pane, discovered
 * as a seat by the agent and reported to the controller with the capabilities of its live
 * control. What the model received is read from the mock Responses server. The TUI was not
 * launched by the agent's hire, so it is unowned (rule 47): no interrupt, and stop_task is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { compileAgentConfig } from "../../node-agent/config.js";
import { startAgent, type RunningAgent } from "../../node-agent/main.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore } from "../kit/test-db.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { startMockResponsesServer, SLOW_MARKER, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, type CodexEnv } from "./kit/codex-env.js";

const bin = requireHarness("codex");
const TMUX = "/usr/bin/tmux";

interface SeatView {
  id: string;
  name: string;
  kind: string;
  status: string;
  inputCapabilities: { deliveryModes: string[]; interrupt: boolean; nextTurnOnly: boolean };
}

describe("a lead messages a real Codex TUI in a tmux pane through the controller and the node agent", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let tmuxSock: string;
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let controller: RunningController;
  let agent: RunningAgent;
  let lead: LeadClient;
  let seat: SeatView;

  beforeAll(async () => {
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer();
    cx = makeCodexEnv(bin, mock.baseUrl);
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
    lead = await connectLead(controller.mcpUrl, controller.leadToken);
  });

  afterAll(async () => {
    await lead?.close();
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

  it("rule 47: list_seats shows the discovered (unowned) Codex seat with [steer, queue] from its live control, and no interrupt", async () => {
    for (let i = 0; i < 600 && !seat; i++) {
      const res = await lead.call("list_seats", {});
      const seats = (res.structuredContent?.seats ?? []) as SeatView[];
      const found = seats.find((s) => s.kind === "codex" && s.inputCapabilities.deliveryModes.length > 0);
      if (found) seat = found;
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(seat).toBeDefined();
    expect(seat.id).toMatch(/^testbox\/codex-/);
    expect(seat.inputCapabilities).toEqual({
      deliveryModes: ["steer", "queue"],
      interrupt: false,
      nextTurnOnly: false,
    });
  });

  it("message_seat starts a turn in the idle TUI, and an explicit steer joins the running turn", async () => {
    const name = seat.name;
    const first = await lead.call("message_seat", { seat: name, message: `fleet task ${SLOW_MARKER}` });
    expect(first.structuredContent, JSON.stringify(first.structuredContent)).toMatchObject({
      outcome: "delivered",
      state: "started",
    });
    await mock.waitFor((q) => q.lastUserText.includes("fleet task"));
    const steer = await lead.call("message_seat", { seat: name, message: "fleet steer", delivery: "steer" });
    expect(steer.structuredContent, JSON.stringify(steer.structuredContent)).toMatchObject({
      outcome: "delivered",
      state: "steered",
    });
    const req = await mock.waitFor((q) => q.lastUserText === "fleet steer");
    expect(req.userTexts.some((t) => t.includes("fleet task"))).toBe(true);
    mock.releaseSlow();
  });

  it("list_seats follows the seat's live status, working while a turn runs and idle after it, with no change to the seat itself", async () => {
    const statusOf = async () =>
      ((await lead.call("list_seats", {})).structuredContent!.seats as SeatView[]).find((s) => s.id === seat.id)
        ?.status;
    for (let i = 0; i < 100 && (await statusOf()) !== "idle"; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf()).toBe("idle");
    const task = await lead.call("message_seat", { seat: seat.name, message: `status task ${SLOW_MARKER}` });
    expect(task.structuredContent, JSON.stringify(task.structuredContent)).toMatchObject({ outcome: "delivered" });
    await mock.waitFor((q) => q.lastUserText.includes("status task"));
    for (let i = 0; i < 100 && (await statusOf()) !== "working"; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf()).toBe("working");
    mock.releaseSlow();
    for (let i = 0; i < 150 && (await statusOf()) !== "idle"; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf()).toBe("idle");
  });

  it("rule 47: stop_task on the unowned seat is unsupported: nothing is sent and the running turn goes on to finish", async () => {
    const task = await lead.call("message_seat", { seat: seat.name, message: `long task ${SLOW_MARKER}` });
    expect(task.structuredContent, JSON.stringify(task.structuredContent)).toMatchObject({ outcome: "delivered" });
    await mock.waitFor((q) => q.lastUserText.includes("long task"));
    const stop = await lead.call("stop_task", { seat: seat.name });
    expect(stop.structuredContent, JSON.stringify(stop.structuredContent)).toMatchObject({ outcome: "unsupported" });
    const statusOf = async () =>
      ((await lead.call("list_seats", {})).structuredContent!.seats as SeatView[]).find((s) => s.id === seat.id)
        ?.status;
    // The roster samples the seat's status: the held turn shows as working, and nothing stopped it.
    for (let i = 0; i < 100 && (await statusOf()) !== "working"; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf()).toBe("working");
    mock.releaseSlow();
    for (let i = 0; i < 150 && (await statusOf()) !== "idle"; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf()).toBe("idle");
  });
});
