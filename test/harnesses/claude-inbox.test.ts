/**
 * Issue 35 item 4 (ADR 0071): a hand-started Claude Code with no Clankie channel and no
 * `--channels` flag, on the pinned 2.1.332, is a seat through its own inbox socket
 * (cross-session messaging). The SessionStart hook files the socket and the token Claude hands
 * its own children (CLAUDE_CODE_MESSAGING_SOCKET/_TOKEN, CLAUDE_PID naming that Claude), so the
 * route is bound to the exact process and session the pane shows; discovery finds the seat by
 * it; no restart command is shown. The socket acknowledges nothing: delivered only on the
 * transcript's peer line that Claude verified came from this process and that carries our id;
 * queued on the enqueue of our id; and a message Claude never shows stays uncertain. No
 * feature flag is seeded for the inbox.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult } from "../../shared/verdicts.js";
import { ClaudeAdapter } from "../../node-agent/harnesses/claude/adapter.js";
import { createClaudeDiscover } from "../../node-agent/harnesses/claude/discover.js";
import { readSessionReport } from "../../node-agent/harnesses/claude/session-report.js";
import { claudeOccupantId, observeClaudeOccupant } from "../../node-agent/harnesses/claude/occupant.js";
import { readCmdline } from "../../node-agent/proofs/linux-read.js";
import type { NativeWrite, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";
import { startClaudeTui, type ClaudeTui } from "./kit/claude-tui.js";

const bin = requireHarness("claude");

describe("a hand-started Claude Code without --channels is a seat through its own inbox socket", () => {
  let mock: MockAnthropicServer;
  let tui: ClaudeTui;
  let seat: SeatRecord;
  const adapter = new ClaudeAdapter({ clock: frozenClock, transcriptWaitMs: 30_000 });
  const msg = (text: string, mode: NativeWrite["mode"] = "auto"): NativeWrite => ({
    deliveryId: randomUUID(),
    text,
    mode,
    conversationId: "c1",
  });

  beforeAll(async () => {
    if (!bin)
      throw new Error("claude is not installed in .harnesses/claude: run `npm run harnesses:install -- claude`");
    mock = await startMockAnthropicServer({ slowMs: 8000 });
    tui = await startClaudeTui(bin, mock.url, { channel: false });
    const argv = readCmdline(tui.claudePid);
    const discover = createClaudeDiscover(tui.channelDir, tui.reportDir);
    const found = await discover(
      { paneId: tui.paneId, title: "claude" } as Parameters<typeof discover>[0],
      { foregroundProcesses: [{ pid: tui.claudePid, argv: argv ?? [] }] } as unknown as Parameters<typeof discover>[1],
    );
    expect(found?.control).toMatchObject({ claudePid: tui.claudePid, route: "inbox" });
    seat = found!;
  });
  afterAll(async () => {
    mock?.release();
    await tui?.close();
    await mock?.close();
  });

  it("the hook filed the inbox Claude handed its own children, under that Claude's pid and session; the screen shows no restart command", async () => {
    const report = readSessionReport(tui.reportDir, tui.claudePid)!;
    expect(report.inbox?.socketPath).toMatch(/cc-socks.*\.sock$/);
    expect(report.inbox?.token).toMatch(/^[0-9a-f]{16,}$/);
    expect(seat.occupantId).toBe(claudeOccupantId(await observeClaudeOccupant(tui.claudePid, tui.reportDir)));
    // Claude's own registry names the same socket for the same session (its sessions/<pid>.json).
    const registry = JSON.parse(readFileSync(`${tui.dir}/config/sessions/${tui.claudePid}.json`, "utf8")) as {
      sessionId: string;
      messagingSocketPath: string;
    };
    expect(registry).toMatchObject({ sessionId: report.sessionId, messagingSocketPath: report.inbox!.socketPath });
    expect(tui.capture()).not.toMatch(/Restart this exact session/);
  });

  it("a live inbox advertises [queue] with nextTurnOnly, and explicit Steer is refused before anything is written", async () => {
    const { snapshot, proofs } = await adapter.inspect(seat);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: ["queue"], interrupt: false, nextTurnOnly: true });
    expect(proofs[0]?.detail).toMatch(/inbox socket live/);
    const steer = msg(`steer me ${randomUUID()}`, "steer");
    const v = await deliverTo(adapter, seat, steer);
    expect(v.result).toBe(AgentResult.Rejected);
    expect(mock.userMessagesContaining(steer.deliveryId)).toBe(0);
  });

  it("an idle seat's message is delivered only on the transcript's peer line from this process carrying our id, and reaches the model once", async () => {
    const m = msg(`inbox hello ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, m);
    expect(v.result, v.detail).toBe(AgentResult.Delivered);
    expect(v.detail).toMatch(/inbox message \(exact id\)/);
    expect(v.nativeReceiptId).toMatch(/^[0-9a-f-]{36}$/);
    await mock.waitForRequest(m.text);
    expect(mock.userMessagesContaining(`clankie_id="${m.deliveryId}"`)).toBe(1);
    expect((await adapter.readSession(seat, 0)).entries.map((e) => e.deliveryId)).toContain(m.deliveryId);
  });

  it("a message sent while a turn runs is queued on Claude's enqueue of our exact id, then delivered to the model after the turn", async () => {
    const busy = msg(`slow inbox turn ${randomUUID()}`);
    expect([AgentResult.Delivered, AgentResult.Queued]).toContain((await deliverTo(adapter, seat, busy)).result);
    // The slow turn is running once the model has its request.
    await mock.waitForRequest(busy.text, 60_000);
    const next = msg(`after the first ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, next);
    expect(v.result, v.detail).toBe(AgentResult.Queued);
    expect(v.detail).toMatch(/queued_until_turn_end/);
    expect(mock.userMessagesContaining(next.deliveryId)).toBe(0);
    await mock.waitForRequest(next.text, 60_000);
    expect(mock.userMessagesContaining(`clankie_id="${next.deliveryId}"`)).toBe(1);
  });
});
