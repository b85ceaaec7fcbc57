/**
 * Inventory scenario 9's busy half and rule 22 end to end with a real Claude Code: a lead's
 * MCP calls → the controller (with its injectable clock) → a node agent child process
 * (`--pane-host tmux`) that discovered the Claude TUI in a private tmux server as a seat.
 * An original whose answer was lost stays fenced for its exact text after 5 minutes while the
 * recipient is busy, and a different message still flows (queued until the turn ends).
 * Scenario 14's idle half and rule 21's acknowledgment branch: an exact channel ack with no
 * transcript entry is uncertain, and the ack the controller kept makes a lead's not_delivered
 * settle record delivered. What the model received is read from the mock Anthropic server.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileControllerConfig } from "../../controller/config.js";
import { startController, type RunningController } from "../../controller/main.js";
import { silentLogger } from "../../shared/logger.js";
import { prepareStore } from "../kit/test-db.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { connectLead, type LeadClient } from "../kit/mcp-client.js";
import { ownerOf } from "../kit/owner.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { startClaudeTui, type ClaudeTui } from "./kit/claude-tui.js";

const bin = requireHarness("claude");

describe.runIf(bin)(
  "scenario 9 (busy recipient) with a real Claude Code seat through the controller and the node agent",
  () => {
    let mock: MockAnthropicServer;
    let tui: ClaudeTui;
    let store: Awaited<ReturnType<typeof prepareStore>>;
    let controller: RunningController;
    let agent: AgentProcess;
    let lead: LeadClient;
    let seatId = "";
    let offsetMs = 0;

    const owner = () => ownerOf(controller.url, controller.ownerToken);
    const claudeSeat = async () => (await owner().seats()).find((s) => s.seat?.kind === 3 && s.online);
    const untilSeat = async () => {
      for (let i = 0; i < 300; i++) {
        const s = await claudeSeat();
        if (s?.seat?.inputCapabilities?.deliveryModes.length) return s;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`the agent never reported the Claude seat with live control:\n${tui.capture()}`);
    };
    const send = (message: string) => lead.call("message_seat", { seat: seatId, message });
    const state = async (id: string) => (await owner().receipts()).find((r) => r.deliveryId === id)?.state;

    beforeAll(async () => {
      mock = await startMockAnthropicServer();
      store = await prepareStore("pglite");
      const agentState = join(store.stateDir, "agent");
      tui = await startClaudeTui(bin!, mock.url, {
        channelDir: join(agentState, "claude", "channels"),
        reportDir: join(agentState, "claude", "sessions"),
      });
      controller = await startController(
        compileControllerConfig({
          stateDir: store.stateDir,
          port: 0,
          databaseUrl: store.databaseUrl,
          heartbeatIntervalMs: 500,
          deliverTimeoutMs: 40_000,
        }),
        silentLogger,
        {
          now: () => new Date(Date.now() + offsetMs),
        },
      );
      const tmuxSocket = join(process.env.TMUX_TMPDIR ?? "/tmp", `tmux-${process.getuid!()}`, tui.tmuxSocket);
      agent = await startAgentProcess({
        controllerUrl: controller.agentUrl,
        stateDir: store.stateDir,
        machine: "box",
        joinToken: await controller.issueJoinToken("box"),
        extraArgs: ["--pane-host", "tmux", "--tmux-socket", tmuxSocket],
      });
      seatId = (await untilSeat()).id;
      lead = await connectLead(controller.mcpUrl, controller.leadToken);
    });
    afterAll(async () => {
      mock?.release();
      await lead?.close();
      await agent?.stop();
      await controller?.close();
      await tui?.close();
      await store?.cleanup();
      await mock?.close();
    });

    it("scenario 14 (idle half) and rule 21: an idle seat's exact channel ack with no transcript entry is uncertain; the controller keeps the ack, and a lead settle not_delivered records delivered, never resent", async () => {
      // This case is about an idle recipient: the freshly started seat is idle.
      for (let i = 0; i < 300 && (await claudeSeat())?.seat?.status !== 1; i++)
        await new Promise((r) => setTimeout(r, 200));
      expect((await claudeSeat())?.seat?.status).toBe(1);
      // The agent reads an empty transcript in place of the session's (the one stand-in: the session
      // report's transcript path), so the exact ack arrives while no transcript entry can be found.
      const reportFile = join(store.stateDir, "agent", "claude", "sessions", `claude-${tui.claudePid}.session.json`);
      const report = readFileSync(reportFile, "utf8");
      const empty = join(store.stateDir, "empty-transcript.jsonl");
      writeFileSync(empty, "");
      writeFileSync(
        reportFile,
        JSON.stringify({ ...(JSON.parse(report) as Record<string, unknown>), transcriptPath: empty }),
      );
      const text = `scenario 14 idle ${randomUUID()}`;
      let id: string;
      try {
        const res = await send(text);
        expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({
          outcome: "unconfirmed",
          deliveryStage: "uncertain",
          reason: "transcript_entry_missing",
        });
        id = res.structuredContent!.deliveryId as string;
        expect(await state(id)).toBe("unconfirmed");
        // The controller retained the exact acknowledgment with the receipt.
        expect((await owner().receipts()).find((r) => r.deliveryId === id)?.nativeReceiptId).toBe(`channel:${id}`);
        // The session read still lacks it, so only the retained ack can make the settle record delivered.
        const settled = await lead.call("reconcile_seat_call", { deliveryId: id, settle: "not_delivered" });
        expect(settled.structuredContent, JSON.stringify(settled.structuredContent)).toMatchObject({
          outcome: "delivered",
          nativeReceiptId: `channel:${id}`,
          detail: expect.stringContaining("acknowledged the original's exact id"),
        });
        // The unattended release, too, records a kept acknowledgment as delivered, never abandoned-unknown.
        await mock.waitForRequest(text);
        for (let i = 0; i < 150 && (await claudeSeat())?.seat?.status === 2; i++)
          await new Promise((r) => setTimeout(r, 200));
        const second = await send(`scenario 14 idle, left to the release ${randomUUID()}`);
        expect(second.structuredContent, JSON.stringify(second.structuredContent)).toMatchObject({
          outcome: "unconfirmed",
          reason: "transcript_entry_missing",
        });
        const secondId = second.structuredContent!.deliveryId as string;
        for (let i = 0; i < 150 && (await claudeSeat())?.seat?.status === 2; i++)
          await new Promise((r) => setTimeout(r, 200));
        offsetMs += 6 * 60_000;
        await send(`scenario 14 a different message after 5 minutes ${randomUUID()}`);
        expect(await state(secondId)).toBe("delivered");
      } finally {
        writeFileSync(reportFile, report);
      }
      expect(await state(id)).toBe("delivered");
      // Never resent: the model saw it once, and the id stays settled.
      expect(mock.userMessagesContaining(text)).toBe(1);
      for (let i = 0; i < 150 && (await claudeSeat())?.seat?.status === 2; i++)
        await new Promise((r) => setTimeout(r, 200));
    });

    it("rule 22: a busy recipient keeps the original fenced for its exact text after 5 minutes, while a different message flows", async () => {
      // The original's answer is lost and it never reaches Claude: the agent is frozen, then killed.
      const originalText = `rule 22 original ${randomUUID()}`;
      agent.freeze();
      const lost = await send(originalText);
      expect(lost.structuredContent).toMatchObject({ outcome: "uncertain" });
      const original = lost.structuredContent!.deliveryId as string;
      await agent.restart();
      seatId = (await untilSeat()).id;
      expect(mock.userMessagesContaining(originalText)).toBe(0);

      // Claude is now busy: a turn the mock holds open.
      const hold = await send(`hold this turn ${randomUUID()}`);
      expect(hold.structuredContent, JSON.stringify(hold.structuredContent)).toMatchObject({ outcome: "delivered" });
      // The release below must meet a seat the agent sees busy: wait for it, and fail if it never is.
      for (let i = 0; i < 300 && (await claudeSeat())?.seat?.status !== 2; i++)
        await new Promise((r) => setTimeout(r, 100));
      expect((await claudeSeat())?.seat?.status, "the agent never reported the held Claude turn as busy").toBe(2);

      offsetMs += 6 * 60_000;
      const other = await send(`rule 22 a different message while busy ${randomUUID()}`);
      expect(other.structuredContent, JSON.stringify(other.structuredContent)).toMatchObject({
        outcome: "delivered",
        state: "queued",
        status: "queued_until_turn_end",
      });
      expect(other.structuredContent!.previous ?? []).not.toContainEqual(
        expect.objectContaining({ deliveryId: original }),
      );
      expect(await state(original)).toBe("uncertain");
      expect((await send(originalText)).structuredContent).toMatchObject({
        reason: "fenced_by_unresolved_original",
        originalDeliveryId: original,
        originalState: "uncertain",
      });
      mock.release();
      expect(mock.userMessagesContaining(originalText)).toBe(0);
    });
  },
);
