/**
 * The Claude adapter against the real interactive Claude Code (pinned version) in a private
 * tmux server, with the Clankie channel and SessionStart hook, driven by the mock Anthropic
 * server. "Written once" is proved from what the mock model received.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { readTurnReport } from "../../node-agent/harnesses/claude/session-report.js";
import { ClaudeAdapter, claudeControl } from "../../node-agent/harnesses/claude/adapter.js";
import type { NativeWrite, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";
import { claudeSeat, startClaudeTui, type ClaudeTui } from "./kit/claude-tui.js";
import { createGuardedEscStop } from "../../node-agent/harnesses/claude/stop.js";
import { tmuxClaudeKeys } from "../../node-agent/harnesses/claude/stop-tmux.js";
import { claudeScreenStatus } from "../../node-agent/harnesses/claude/screen.js";
import { claudeOccupantId, observeClaudeOccupant } from "../../node-agent/harnesses/claude/occupant.js";
import { createClaudeDiscover } from "../../node-agent/harnesses/claude/discover.js";
import { readSessionReport } from "../../node-agent/harnesses/claude/session-report.js";
import { readCmdline } from "../../node-agent/proofs/linux-read.js";

const bin = requireHarness("claude");

/** A unix-socket relay in front of the channel that swallows the ack of one event id. */
function ackEatingRelay(target: string, path: string, eventId: () => string): Promise<Server> {
  const server = createServer((client) => {
    const upstream = connect(target);
    client.pipe(upstream);
    let buffer = "";
    upstream.setEncoding("utf8");
    upstream.on("data", (c: string) => {
      buffer += c;
      let at: number;
      while ((at = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, at + 1);
        buffer = buffer.slice(at + 1);
        if (line.includes('"op":"ack"') && line.includes(eventId())) {
          client.destroy();
          return;
        }
        client.write(line);
      }
    });
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

describe.runIf(bin)("ClaudeAdapter against the real interactive Claude Code", () => {
  let mock: MockAnthropicServer;
  let tui: ClaudeTui;
  let seat: SeatRecord;
  const adapter = new ClaudeAdapter({ clock: frozenClock, transcriptWaitMs: 60_000 });
  const msg = (text: string, mode: NativeWrite["mode"] = "auto"): NativeWrite => ({
    deliveryId: randomUUID(),
    text,
    mode,
    conversationId: "c1",
  });

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    tui = await startClaudeTui(bin!, mock.url);
    seat = await claudeSeat(tui, "claude-1");
  });
  afterAll(async () => {
    mock?.release();
    await tui?.close();
    await mock?.close();
  });

  it("the SessionStart hook reported the session id and transcript path under Claude's pid", () => {
    const files = readdirSync(tui.reportDir);
    expect(files).toEqual([`claude-${tui.claudePid}.session.json`]);
    const report = JSON.parse(readFileSync(join(tui.reportDir, files[0]!), "utf8")) as {
      sessionId: string;
      transcriptPath: string;
    };
    expect(report.transcriptPath).toContain(report.sessionId);
  });

  it("a live channel advertises [queue] with nextTurnOnly, and no interrupt without a guarded key input", async () => {
    const { snapshot } = await adapter.inspect(seat);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: ["queue"], interrupt: false, nextTurnOnly: true });
  });

  it("an idle seat's message is delivered only on the transcript's channel line carrying our id", async () => {
    const m = msg(`idle hello ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, m);
    expect(v.result).toBe(AgentResult.Delivered);
    expect(v.nativeReceiptId).toMatch(/^[0-9a-f-]{36}$/);
    await mock.waitForRequest(m.text);
    expect(mock.userMessagesContaining(`clankie_id="${m.deliveryId}"`)).toBe(1);
    expect((await adapter.readSession(seat, 0)).entries.map((e) => e.deliveryId)).toContain(m.deliveryId);
  });

  it("the turn hooks fire for a channel-started turn: Stop files it idle under Claude's pid, and the seat reads idle", async () => {
    let turn = readTurnReport(tui.reportDir, tui.claudePid);
    for (let i = 0; i < 150 && turn?.state !== "idle"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      turn = readTurnReport(tui.reportDir, tui.claudePid);
    }
    expect(turn).toMatchObject({ state: "idle", event: "Stop", claudePid: tui.claudePid });
    expect((await adapter.inspect(seat)).snapshot.status).toBe("idle");
  });

  it("explicit steer is refused before sending: a channel cannot steer, and nothing reaches Claude", async () => {
    const m = msg(`never steer ${randomUUID()}`, "steer");
    const v = await deliverTo(adapter, seat, m);
    expect(v.result).toBe(AgentResult.Rejected);
    expect(v.reason).toBe("delivery_mode_unsupported");
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });

  it("scenario 14 (busy half): a mid-turn message to a proven receiver is queued until the turn ends on the exact ack, and runs once", async () => {
    // The previous test's turn must be over (on a loaded box it can still be finishing), so this message starts its own.
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(adapter, seat, hold)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(hold.text);
    expect((await adapter.inspect(seat)).snapshot.status).toBe("working");
    const later = msg(`after this turn ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, later);
    expect(v.result).toBe(AgentResult.Queued);
    expect(v.detail).toContain("queued_until_turn_end");
    mock.release();
    await mock.waitForRequest(later.text);
    expect(mock.userMessagesContaining(`clankie_id="${later.deliveryId}"`)).toBe(1);
  });

  it("an ack lost after the push is unconfirmed, never resent, and Claude shows the message exactly once", async () => {
    const relayPath = join(tui.dir, "relay.sock");
    const real = join(tui.channelDir, `claude-${tui.claudePid}.sock`);
    const m = msg(`ack lost ${randomUUID()}`);
    const relay = await ackEatingRelay(real, relayPath, () => m.deliveryId);
    try {
      // The same channel, reached through the relay: a token file beside the relay socket.
      execFileSync("cp", [
        join(tui.channelDir, `claude-${tui.claudePid}.token`),
        join(tui.dir, `claude-${tui.claudePid}.token`),
      ]);
      execFileSync("ln", ["-s", relayPath, join(tui.dir, `claude-${tui.claudePid}.sock`)]);
      const viaRelay: SeatRecord = {
        ...seat,
        kind: SeatKind.Claude,
        name: "claude-relay",
        control: { ...claudeControl(seat), channelDir: tui.dir },
      };
      const v = await deliverTo(adapter, viaRelay, m);
      expect(v.result).toBe(AgentResult.Unconfirmed);
      expect(v.reason).toBe("ack_lost");
      await mock.waitForRequest(m.text);
      expect(mock.userMessagesContaining(`clankie_id="${m.deliveryId}"`)).toBe(1);
    } finally {
      await new Promise<void>((r) => relay.close(() => r()));
    }
  });

  it("Stop presses one guarded Esc in the exact pane while Claude works with an empty input line, and reports stopped once idle", async () => {
    const keys = tmuxClaudeKeys(tui.tmuxSocket);
    let presses = 0;
    const counted = { ...keys, pressEscape: async (p: string) => (presses++, keys.pressEscape(p)) };
    const [terminalId, sessionId] = execFileSync(
      "tmux",
      ["-L", tui.tmuxSocket, "display-message", "-p", "-t", tui.paneId, "#{window_id}\t#{session_name}"],
      { encoding: "utf8" },
    )
      .trim()
      .split("\t");
    const paned: SeatRecord = {
      ...seat,
      name: "claude-paned",
      pane: { host: "tmux", paneId: tui.paneId, terminalId: terminalId!, sessionId: sessionId! },
    };
    const stopping = new ClaudeAdapter({
      clock: frozenClock,
      transcriptWaitMs: 60_000,
      stopper: createGuardedEscStop({ keys: counted, recheckAuthority: async () => true, idleWaitMs: 30_000 }),
    });
    expect((await stopping.inspect(paned)).snapshot.inputCapabilities.interrupt).toBe(true);
    // Earlier tests' turns must be over, so this message starts its own turn.
    for (let i = 0; i < 150 && (await stopping.inspect(paned)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(stopping, paned, hold)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(hold.text);
    for (let i = 0; i < 150 && claudeScreenStatus(tui.capture()) !== "working"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const r = await stopping.stop(paned);
    expect(r.result, `${r.detail}\n${tui.capture()}`).toBe("stopped");
    expect(presses).toBe(1);
    expect((await stopping.stop(paned)).result).toBe("already_finished");
    expect(presses).toBe(1);
    mock.release();
  });

  it("rule 46: a seat recorded for an earlier lifetime of the same pid is another occupant: no capabilities, nothing written", async () => {
    const live = await observeClaudeOccupant(tui.claudePid, tui.reportDir);
    expect(live.startTime).toBeGreaterThan(0);
    // The record a previous process with this pid would have left: same pid, same session file, another start time.
    const reused: SeatRecord = {
      ...seat,
      name: "claude-reused-pid",
      occupantId: claudeOccupantId({ ...live, startTime: live.startTime! - 1 }),
    };
    const { snapshot } = await adapter.inspect(reused);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: [], interrupt: false, nextTurnOnly: false });
    expect(snapshot.occupantId).toBe(seat.occupantId);
    const m = msg(`to a reused pid ${randomUUID()}`);
    expect((await deliverTo(adapter, reused, m)).result).toBe(AgentResult.NotSent);
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });

  it("rule 46: a new session in the same process (/clear) is another occupant: the old record's capabilities clear, discovery records the new one", async () => {
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const before = readSessionReport(tui.reportDir, tui.claudePid)!.sessionId;
    // The owner types /clear; Claude keeps its process and starts a new session (SessionStart source "clear").
    const tmux = (...a: string[]) => execFileSync("tmux", ["-L", tui.tmuxSocket, ...a]);
    tmux("send-keys", "-t", tui.paneId, "-l", "/clear");
    await new Promise((r) => setTimeout(r, 500));
    tmux("send-keys", "-t", tui.paneId, "Enter");
    let after = before;
    for (let i = 0; i < 150 && after === before; i++) {
      await new Promise((r) => setTimeout(r, 200));
      after = readSessionReport(tui.reportDir, tui.claudePid)?.sessionId ?? before;
    }
    expect(after, tui.capture()).not.toBe(before);

    const old = await adapter.inspect(seat);
    expect(old.snapshot.inputCapabilities).toEqual({ deliveryModes: [], interrupt: false, nextTurnOnly: false });
    expect(old.snapshot.occupantId).not.toBe(seat.occupantId);
    expect(old.snapshot.occupantId).toContain(after);
    const stale = msg(`meant for the old session ${randomUUID()}`);
    expect((await deliverTo(adapter, seat, stale)).result).toBe(AgentResult.NotSent);
    expect(mock.userMessagesContaining(stale.text)).toBe(0);

    const rediscovered = await createClaudeDiscover(tui.channelDir, tui.reportDir)(
      { paneId: tui.paneId, terminalId: "", sessionId: "", title: "claude" } as Parameters<
        ReturnType<typeof createClaudeDiscover>
      >[0],
      {
        paneId: tui.paneId,
        shellPid: -1,
        tty: "",
        foregroundProcessGroupId: tui.claudePid,
        foregroundProcesses: [
          {
            pid: tui.claudePid,
            name: "claude",
            argv: ((a) => (Array.isArray(a) ? a : []))(readCmdline(tui.claudePid)),
          },
        ],
      },
    );
    expect(rediscovered?.occupantId).toBe(old.snapshot.occupantId);
    seat = { ...rediscovered!, name: "claude-1" };
    expect((await adapter.inspect(seat)).snapshot.inputCapabilities.deliveryModes).toEqual(["queue"]);
  });

  it("a channel server that has died gives a typed not-sent, with no crash and nothing written", async () => {
    const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(tui.claudePid)], { encoding: "utf8" });
    const channelPid = Number(
      children
        .split("\n")
        .find((l) => l.includes("claude-channel"))
        ?.trim()
        .split(/\s+/)[0],
    );
    expect(channelPid).toBeGreaterThan(1);
    process.kill(channelPid, "SIGKILL");
    const m = msg(`to a dead channel ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, m);
    expect(v.result).toBe(AgentResult.NotSent);
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });
});
