/**
 * Workers answer back from a real Claude Code (rule 48, scenario 22; issue 13 part 2): the
 * Claude TUI in a private tmux server, discovered as a seat by the node agent, loads the
 * worker-side MCP server (`clankie worker mcp`) from its --mcp-config beside the channel. The
 * lead messages the seat; the mock model answers with a mcp__clankie__message_clankie tool
 * call; the agent proves from the kernel that the caller runs in the seat's pane, the
 * controller returns the binding, the report is stored, and the lead reads it with
 * worker_reports. A request lost at the controller's fault point holds the pane's claim, and
 * the next call settles it as not_sent and carries it as previous.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startClaudeTui, type ClaudeTui } from "./kit/claude-tui.js";
import {
  prepareWorkerReportStore,
  reportToolUse,
  startWorkerReportFleet,
  type WorkerReportFleet,
} from "./kit/worker-report-fleet.js";

const bin = requireHarness("claude");

describe("a real Claude Code worker answers its lead with message_clankie through `clankie worker mcp`", () => {
  let mock: MockAnthropicServer;
  let tui: ClaudeTui;
  let fleet: WorkerReportFleet;
  let seat: { id: string; name: string };
  const claimFiles = () => {
    const dir = join(fleet.agentStateDir, "worker", "claims");
    return existsSync(dir) ? readdirSync(dir) : [];
  };

  beforeAll(async () => {
    if (!bin)
      throw new Error("claude is not installed in .harnesses/claude: run `npm run harnesses:install -- claude`");
    assertBuilt();
    mock = await startMockAnthropicServer({ toolUse: reportToolUse, chainTools: true });
    const store = await prepareWorkerReportStore();
    tui = await startClaudeTui(bin, mock.url, {
      channelDir: join(store.agentStateDir, "claude", "channels"),
      reportDir: join(store.agentStateDir, "claude", "sessions"),
      mcpServers: { clankie: store.workerMcp },
      allowedTools: ["mcp__clankie__message_clankie", "mcp__clankie__message_clankie_status"],
    });
    const tmuxSocket = join(process.env.TMUX_TMPDIR ?? "/tmp", `tmux-${process.getuid!()}`, tui.tmuxSocket);
    fleet = await startWorkerReportFleet(store, mock, tmuxSocket);
    seat = await fleet.seat("claude");
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    await tui?.close();
    await mock?.close();
  });

  it("rule 48: the Claude worker calls message_clankie from its pane, the report is stored under the binding, and the lead reads it", async () => {
    const receipt = await fleet.askReport(seat.name, "claude worker report: done");
    expect(receipt).toMatchObject({
      received: true,
      deliveryStage: "stored",
      deliveryId: expect.any(String),
      binding: expect.any(String),
    });
    const reports = await fleet.reports();
    expect(reports.filter((r) => r.text === "claude worker report: done")).toEqual([
      expect.objectContaining({ deliveryId: receipt.deliveryId, seat: seat.id, unadopted: false }),
    ]);
    expect(claimFiles()).toEqual([]);
  });

  it("rule 48: a lost request holds the pane's claim; the next report settles it as not_sent (previous) and is stored once", async () => {
    const cut = fleet.faults.arm((c) => c.op === "worker_send" && c.text === "claude lost report", "request");
    const lost = await fleet.askReport(seat.name, "claude lost report");
    expect((await cut).id).toBe(lost.deliveryId);
    expect(lost).toMatchObject({ received: false, deliveryStage: "uncertain" });
    expect(claimFiles()).toHaveLength(1);
    const next = await fleet.askReport(seat.name, "claude next report");
    expect(next).toMatchObject({
      received: true,
      deliveryStage: "stored",
      previous: { deliveryId: lost.deliveryId, deliveryStage: "not_sent" },
    });
    expect(claimFiles()).toEqual([]);
    const texts = (await fleet.reports()).map((r) => r.text);
    expect(texts.filter((t) => t === "claude next report")).toHaveLength(1);
    expect(texts).not.toContain("claude lost report");
  });
});
