/**
 * Issue 13/12 follow-up, rule 41, with a hired real OpenCode (pinned 1.18.33) in real tmux: a
 * lead's `message_seat` sent while the seat's v1 turn runs (early, midway, near its end) is
 * `delivered` with stage `stored` (queued behind the turn) or `consumed` (the turn had ended),
 * and either way reaches the model exactly once, as the newest user message. A send the agent
 * refused before writing (stage `unavailable`, say the freshness gate on a loaded machine) wrote
 * nothing: it must not reach the model, and the test sends a new message instead.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { assertBuilt } from "../kit/cli.js";
import { startHireFleet, type HireFleet } from "../kit/hire-fleet.js";
import type { LeadClient } from "../kit/mcp-client.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeHireEnv, type HireEnv } from "./kit/hire-envs.js";

const bin = requireHarness("opencode");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The mock streams a "slow" turn for this long, so the seat stays busy through it. */
const SLOW_MS = 2000;

describe("rule 41: message_seat to a hired OpenCode seat while its turn runs reaches the model once", () => {
  let mock: MockAnthropicServer;
  let env: HireEnv;
  let fleet: HireFleet;
  let hiring: LeadClient;
  let seat: string;

  beforeAll(async () => {
    if (!bin)
      throw new Error("opencode is not installed in .harnesses/opencode: run `npm run harnesses:install -- opencode`");
    assertBuilt();
    mock = await startMockAnthropicServer({ slowMs: SLOW_MS });
    env = openCodeHireEnv(bin, mock.url);
    fleet = await startHireFleet("pglite", { hire: env.hire });
    hiring = await fleet.leadFor("hiring-lead");
    const brief = `brief ${randomUUID()}`;
    const res = await hiring.call("hire_agent", {
      harness: "opencode",
      workingDirectory: env.work,
      title: "opencode busy",
      role: "busy",
      brief,
      model: env.model,
    });
    expect(res.structuredContent, JSON.stringify(res.structuredContent)).toMatchObject({ outcome: "spawned" });
    seat = res.structuredContent!.seat as string;
    await mock.waitForRequest(brief);
  }, 120_000);
  afterAll(async () => {
    await fleet?.close();
    await mock?.close();
    if (env) rmSync(env.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  /**
   * message_seat until one is written (a pre-send refusal wrote nothing and must not reach the
   * model). Refusals are retried for up to 30 s: on a slow 2-core VM, right after the hire,
   * OpenCode answered the session proof 0.7-2.2 s late while it started a turn, so the
   * controller's authority was too old at the write (proof_stale) for about 5 s in a row.
   */
  async function sendWritten(prefix: string): Promise<{ text: string; out: Record<string, unknown> }> {
    const until = Date.now() + 30_000;
    let last: Record<string, unknown> = {};
    while (Date.now() < until) {
      const text = `${prefix} ${randomUUID()}`;
      const res = await hiring.call("message_seat", { seat, message: text });
      const out = (res.structuredContent ?? {}) as Record<string, unknown>;
      if (out.outcome === "delivered") return { text, out };
      expect(out.deliveryStage, JSON.stringify(out)).toBe("unavailable");
      last = out;
      await sleep(1000);
      expect(mock.userMessagesContaining(text)).toBe(0);
    }
    throw new Error(`message_seat never wrote the message in 30 s; the last refusal: ${JSON.stringify(last)}`);
  }

  for (const [moment, offsetMs] of [
    ["early in the turn", 0],
    ["midway through the turn", SLOW_MS / 2],
    ["near the turn's end", SLOW_MS - 100],
  ] as const) {
    it(`rule 41 / issue 13 follow-up: sent ${moment}, it is stored or consumed, and the model gets it exactly once`, async () => {
      const busy = await sendWritten("slow turn");
      await mock.waitForRequest(busy.text);
      await sleep(offsetMs);
      const later = await sendWritten("later");
      expect(["stored", "consumed"], JSON.stringify(later.out)).toContain(later.out.deliveryStage);
      await mock.waitForRequest(later.text, 30_000);
      // The slow turn and ours end before the next case; a resend would show as a second copy.
      await sleep(SLOW_MS + 1000);
      expect(mock.userMessagesContaining(later.text)).toBe(1);
      expect(mock.userMessagesContaining(busy.text)).toBe(1);
    }, 120_000);
  }
});
