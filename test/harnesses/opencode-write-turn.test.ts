/**
 * Rule 39 (ADR 0207) on the real pinned OpenCode (`opencode serve`, mock Anthropic model): native
 * idle releases dispatch only after the exact active turn is observed terminal. A message is
 * written through the adapter's delivery pipeline while the mock model holds the running turn's
 * answer, and its own turn then streams slowly (a held one's release also ends OpenCode's held
 * title request, which a stalled first turn needs); the session is then read the way the agent's ReadSession
 * RPC reads it (agent-service.ts passes the adapter's readSession through), and the unattended
 * release's own decision (idleReleases) is asked with what that read reports. While either turn
 * streams, the write's turn reads `active` and nothing releases, even were the seat read idle;
 * once the model finishes, it reads `terminal`, the seat idle, and the release would go ahead.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult } from "../../shared/verdicts.js";
import { OpenCodeAdapter } from "../../node-agent/harnesses/opencode/adapter.js";
import type { NativeWrite } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { until } from "../kit/until.js";
import { requireHarness } from "./kit/harness-bin.js";
import { idleReleaseOn as releases, untilIdleReleases } from "./kit/idle-release-read.js";
import { openCodeSeat, startOpenCodeServer, type OpenCodeServer } from "./kit/opencode-server.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";

const bin = requireHarness("opencode");
const SLOW_MS = 15_000;

describe.runIf(bin)("rule 39 on the real OpenCode: the write's turn is terminal only once the model finished", () => {
  let mock: MockAnthropicServer;
  let server: OpenCodeServer;
  const adapter = new OpenCodeAdapter({ clock: frozenClock, promptedWaitMs: 15_000 });
  const msg = (text: string): NativeWrite => ({ deliveryId: randomUUID(), text, mode: "auto", conversationId: "c1" });

  beforeAll(async () => {
    // Long enough a stream that the reads below fall inside it on a loaded box.
    mock = await startMockAnthropicServer({ slowMs: SLOW_MS });
    server = await startOpenCodeServer(bin!, mock.url);
  });
  afterAll(async () => {
    mock?.release();
    await server?.close();
    await mock?.close();
  });

  it("rule 39: a message written behind a held turn reads active (stored, then while its own turn streams) and terminal only after both end", async () => {
    const sessionId = await server.createSession();
    const seat = openCodeSeat(server, sessionId);
    const running = msg(`hold the running turn ${randomUUID()}`);
    expect((await deliverTo(adapter, seat, running)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(running.text);
    expect((await adapter.inspect(seat)).snapshot.status).toBe("working");

    // Our message leaves while the model holds the running turn: OpenCode stores it and runs it next.
    const ours = msg(`slow ours ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, ours);
    expect(v.result).toBe(AgentResult.Queued);
    expect(v.deliveryStage).toBe("stored");
    const stored = await adapter.readSession(seat, 0, ours.deliveryId);
    expect(stored.complete).toBe(true);
    expect(stored.writeTurn).toBe("active");
    expect(releases(stored)).toBe(false);
    // Even a seat read idle (between two moments) keeps the fence while the turn is active.
    expect(releases(stored, "idle")).toBe(false);

    // The running turn ends (its held title request with it); ours starts and the model streams it slowly.
    await until(() => {
      mock.release();
      return mock.requestsFor(ours.text).some((r) => r.latestUserText.includes(ours.text));
    }, "the model is asked our message's turn");
    const streaming = await adapter.readSession(seat, 0, ours.deliveryId);
    expect(streaming.status).toBe("working");
    expect(streaming.writeTurn).toBe("active");
    expect(releases(streaming, "idle")).toBe(false);

    // The model finishes: the write's turn reads terminal, and the seat idle.
    await untilIdleReleases(adapter, seat, ours.deliveryId);
    expect(mock.userMessagesContaining(ours.text)).toBe(1);
  }, 120_000);
});
