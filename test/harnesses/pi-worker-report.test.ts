/**
 * Workers answer back from a real Pi TUI (rule 48, scenario 22; issue 13 part 2): Pi loads no
 * MCP servers, so the seat's Pi loads the Clankie extension (its seat socket) and the worker
 * tools extension, which serves `clankie worker mcp`'s own tools inside Pi. The node agent
 * discovers the Pi in its private tmux server as a seat; the lead messages it; the mock model
 * answers with a message_clankie tool call; the agent proves the caller (Pi itself) runs in
 * the seat's pane, the controller binds and stores the report, and the lead reads it. An
 * answer lost after the report was stored is reconciled as stored and never stored twice.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startPiPane, type PiPane } from "./kit/pi-pane.js";
import {
  prepareWorkerReportStore,
  reportToolUse,
  startWorkerReportFleet,
  type WorkerReportFleet,
} from "./kit/worker-report-fleet.js";

const bin = requireHarness("pi");

describe("a real Pi worker answers its lead with message_clankie through the worker tools extension", () => {
  let mock: MockAnthropicServer;
  let fleet: WorkerReportFleet;
  let tmuxSock = "";
  let pane: PiPane | undefined;
  let seat: { id: string; name: string };
  const claimFiles = () => {
    const dir = join(fleet.agentStateDir, "worker", "claims");
    return existsSync(dir) ? readdirSync(dir) : [];
  };

  beforeAll(async () => {
    if (!bin) throw new Error("pi is not installed in .harnesses/pi: run `npm run harnesses:install -- pi`");
    assertBuilt();
    mock = await startMockAnthropicServer({ toolUse: reportToolUse });
    const store = await prepareWorkerReportStore();
    pane = startPiPane({
      bin,
      root: join(store.stateDir, "pi-seat"),
      mockUrl: mock.url,
      agentStateDir: store.agentStateDir,
      workerTools: true,
    });
    tmuxSock = pane.tmuxSocket;
    fleet = await startWorkerReportFleet(store, mock, tmuxSock);
    seat = await fleet.seat("pi");
  });
  afterAll(async () => {
    mock?.release();
    await fleet?.close();
    pane?.close();
    await mock?.close();
  });

  it("rule 48: the Pi worker calls message_clankie from its pane, the report is stored under the binding, and the lead reads it", async () => {
    const receipt = await fleet.askReport(seat.name, "pi worker report: done");
    expect(receipt).toMatchObject({
      received: true,
      deliveryStage: "stored",
      deliveryId: expect.any(String),
      binding: expect.any(String),
    });
    expect((await fleet.reports()).filter((r) => r.text === "pi worker report: done")).toEqual([
      expect.objectContaining({ deliveryId: receipt.deliveryId, seat: seat.id, unadopted: false }),
    ]);
    expect(claimFiles()).toEqual([]);
  });

  it("rule 48: an answer lost after the report was stored holds the claim; the same text again is reconciled as stored, never stored twice", async () => {
    const cut = fleet.faults.arm((c) => c.op === "worker_send" && c.text === "pi stored, answer lost", "answer");
    const lost = await fleet.askReport(seat.name, "pi stored, answer lost");
    expect((await cut).id).toBe(lost.deliveryId);
    expect(lost).toMatchObject({ received: false, deliveryStage: "uncertain" });
    expect(claimFiles()).toHaveLength(1);
    const again = await fleet.askReport(seat.name, "pi stored, answer lost");
    expect(again).toMatchObject({ received: true, deliveryStage: "stored", deliveryId: lost.deliveryId });
    expect(claimFiles()).toEqual([]);
    expect((await fleet.reports()).filter((r) => r.text === "pi stored, answer lost")).toHaveLength(1);
  });
});
