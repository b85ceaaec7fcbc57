/**
 * Issue 13/12 follow-up, rule 41: a message written to an OpenCode seat while a v1 turn runs
 * (real pinned `opencode serve`, mock Anthropic model) is `queued` with stage `stored`, and that
 * is honest: OpenCode runs it. At every moment tried — early in a turn that calls a tool (taken
 * at the turn's next step), in the middle of the final step, and right as the final step ends
 * (the window between the loop's last look and idle) — the message is stored once under our id,
 * reaches the model exactly once as the newest user message, and the session ends idle.
 * Nothing is resent: exactly one stored entry per delivery id.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult } from "../../shared/verdicts.js";
import { OpenCodeAdapter } from "../../node-agent/harnesses/opencode/adapter.js";
import type { NativeWrite, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeSeat, startOpenCodeServer, type OpenCodeServer } from "./kit/opencode-server.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";

const bin = requireHarness("opencode");
/** A brief carrying this marker makes the mock answer its turn's first step with a tool call. */
const TOOL = "[tool]";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(bin)(
  "rule 41: a message written while an OpenCode v1 turn runs is stored and OpenCode runs it once",
  () => {
    let mock: MockAnthropicServer;
    let server: OpenCodeServer;
    const adapter = new OpenCodeAdapter({ clock: frozenClock, promptedWaitMs: 15_000 });

    beforeAll(async () => {
      mock = await startMockAnthropicServer({
        slowMs: 1600,
        toolUse: (r) =>
          r.latestUserText.includes(TOOL) && r.toolNames.includes("glob")
            ? { name: "glob", input: { pattern: "*.none" } }
            : undefined,
      });
      server = await startOpenCodeServer(bin!, mock.url);
    });
    afterAll(async () => {
      mock?.release();
      await server?.close();
      await mock?.close();
    });

    const msg = (text: string): NativeWrite => ({ deliveryId: randomUUID(), text, mode: "auto", conversationId: "c1" });
    const seat = async (): Promise<SeatRecord> => openCodeSeat(server, await server.createSession());

    /** The message was stored once (our id, no resend), reached the model once as the newest user text, and the seat ends idle. */
    async function expectRunOnce(
      s: SeatRecord,
      brief: NativeWrite,
      later: NativeWrite,
      keepReleasing: boolean,
    ): Promise<void> {
      // A held brief's later requests (its next step, the title) are held too: keep ending them.
      const releaser = keepReleasing ? setInterval(() => mock.release(), 20) : undefined;
      try {
        await mock.waitForRequest(later.text, 30_000);
        let idle = false;
        for (let i = 0; i < 300 && !idle; i++) {
          idle = (await adapter.inspect(s)).snapshot.status === "idle";
          if (!idle) await sleep(100);
        }
        expect(idle, "the session ends idle after answering the queued message").toBe(true);
      } finally {
        if (releaser) clearInterval(releaser);
      }
      expect(mock.userMessagesContaining(later.text)).toBe(1);
      expect(mock.requestsFor(later.text).length).toBeGreaterThanOrEqual(1);
      expect((await adapter.readSession(s, 0)).entries.map((e) => e.deliveryId)).toEqual([
        brief.deliveryId,
        later.deliveryId,
      ]);
    }

    for (const [moment, offsetMs, withTool] of [
      ["early in a turn that calls a tool (taken at its next step)", 0, true],
      ["in the middle of a turn's final step", 800, false],
      ["late in a tool turn's final step", 1400, true],
    ] as const) {
      it(`rule 41 / issue 13 follow-up: written ${moment}, it is queued (stored) and reaches the model exactly once`, async () => {
        const s = await seat();
        const brief = msg(`slow brief ${withTool ? TOOL : ""} ${randomUUID()}`);
        expect((await deliverTo(adapter, s, brief)).result).toBe(AgentResult.Delivered);
        await mock.waitForRequest(brief.text);
        await sleep(offsetMs);
        const later = msg(`later ${randomUUID()}`);
        const v = await deliverTo(adapter, s, later);
        expect(v.result).toBe(AgentResult.Queued);
        expect(v.deliveryStage).toBe("stored");
        await expectRunOnce(s, brief, later, false);
      }, 90_000);
    }

    for (const afterEndMs of [0, 5, 20, 60]) {
      it(`rule 41 / issue 13 follow-up: written ${afterEndMs} ms after the turn's last stream ended (seen busy just before), it is stored and still reaches the model exactly once`, async () => {
        const s = await seat();
        const brief = msg(`hold brief ${randomUUID()}`);
        expect((await deliverTo(adapter, s, brief)).result).toBe(AgentResult.Delivered);
        await mock.waitForRequest(brief.text);
        // The pipeline inspects, then writes: end the turn between the two, the narrowest race.
        expect((await adapter.inspect(s)).snapshot.status).toBe("working");
        mock.release();
        if (afterEndMs) await sleep(afterEndMs);
        const later = msg(`later ${randomUUID()}`);
        const v = await adapter.write(s, { ...later });
        expect([AgentResult.Queued, AgentResult.Delivered]).toContain(v.result);
        expect(["stored", "consumed"]).toContain(v.deliveryStage);
        await expectRunOnce(s, brief, later, true);
      }, 90_000);
    }
  },
);
