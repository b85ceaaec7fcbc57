/**
 * Rule 39 (ADR 0207) on the real pinned Claude Code: native idle releases dispatch only after the
 * exact active turn is observed terminal. A message is written through the adapter's delivery
 * pipeline while the mock model holds the running turn's answer, and its own turn is held too;
 * the session is then read the way the agent's ReadSession RPC reads it (agent-service.ts passes
 * the adapter's readSession through), and the unattended release's own decision (idleReleases) is
 * asked with what that read reports. While either held turn streams, the write's turn reads
 * `active` and nothing releases, even were the seat read idle; once the model finishes, it reads
 * `terminal`, the seat idle, and the release would go ahead.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult } from "../../shared/verdicts.js";
import { ClaudeAdapter } from "../../node-agent/harnesses/claude/adapter.js";
import type { NativeWrite, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { until } from "../kit/until.js";
import { requireHarness } from "./kit/harness-bin.js";
import { idleReleaseOn as releases, untilIdleReleases } from "./kit/idle-release-read.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";
import { claudeSeat, startClaudeTui, type ClaudeTui } from "./kit/claude-tui.js";

const bin = requireHarness("claude");

describe.runIf(bin)(
  "rule 39 on the real Claude Code: the write's turn is terminal only once the model finished",
  () => {
    let mock: MockAnthropicServer;
    let tui: ClaudeTui;
    let seat: SeatRecord;
    const adapter = new ClaudeAdapter({ clock: frozenClock, transcriptWaitMs: 60_000 });
    const msg = (text: string): NativeWrite => ({ deliveryId: randomUUID(), text, mode: "auto", conversationId: "c1" });

    beforeAll(async () => {
      mock = await startMockAnthropicServer();
      tui = await startClaudeTui(bin!, mock.url);
      seat = await claudeSeat(tui, "claude-r39");
    });
    afterAll(async () => {
      mock?.release();
      await tui?.close();
      await mock?.close();
    });

    it("rule 39: a message written behind a held turn reads active (queued, then its own held turn) and terminal only after both end", async () => {
      const running = msg(`hold the running turn ${randomUUID()}`);
      expect((await deliverTo(adapter, seat, running)).result).toBe(AgentResult.Delivered);
      await mock.waitForRequest(running.text);
      expect((await adapter.inspect(seat)).snapshot.status).toBe("working");

      // Our message leaves while the model holds the running turn: Claude queues it behind that turn.
      const ours = msg(`hold ours as well ${randomUUID()}`);
      expect((await deliverTo(adapter, seat, ours)).result).toBe(AgentResult.Queued);
      const queued = await adapter.readSession(seat, 0, ours.deliveryId);
      expect(queued.complete).toBe(true);
      expect(queued.entries.map((e) => e.deliveryId)).not.toContain(ours.deliveryId);
      expect(queued.writeTurn).toBe("active");
      expect(releases(queued)).toBe(false);
      // Even a seat read idle (hooks and screen between two moments) keeps the fence while the turn is active.
      expect(releases(queued, "idle")).toBe(false);

      // The running turn ends; ours starts and the model holds it: still not terminal.
      mock.release();
      await mock.waitForRequest(ours.text);
      // The model already streams our turn; Claude writes its prompt line a moment later. Active at both moments.
      expect((await adapter.readSession(seat, 0, ours.deliveryId)).writeTurn).toBe("active");
      const streaming = await until(async () => {
        const r = await adapter.readSession(seat, 0, ours.deliveryId);
        return r.entries.some((e) => e.deliveryId === ours.deliveryId) && r;
      }, "the transcript shows our message's prompt line");
      expect(streaming.writeTurn).toBe("active");
      expect(releases(streaming, "idle")).toBe(false);

      // The model finishes: the turn our write waited behind reads terminal, and the seat idle.
      mock.release();
      await untilIdleReleases(adapter, seat, ours.deliveryId);
      expect(mock.userMessagesContaining(`clankie_id="${ours.deliveryId}"`)).toBe(1);
    }, 120_000);
  },
);
