/**
 * The OpenCode adapter against the real `opencode serve` (pinned version), driven by the
 * mock Anthropic server. Faults are injected by a proxy in front of the real server; every
 * "written once" claim is proved from what the mock model received. Rule 41: each write carries
 * the stage its OpenCode status maps to, and an uncertain delivery blocks even an explicit retry.
 * Issue 13 part 2: deliveries go through v1 prompt_async with our message id (the route whose
 * turns are offered MCP tools); v2 is used only to join a run another client started through v2.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult } from "../../shared/verdicts.js";
import { OpenCodeAdapter } from "../../node-agent/harnesses/opencode/adapter.js";
import { deliveryIdOf } from "../../node-agent/harnesses/opencode/ids.js";
import type { NativeWrite, SeatOf, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { startHttpFaultProxy, type HttpFaultProxy } from "../fixtures/http-fault-proxy.js";
import { requireHarness } from "./kit/harness-bin.js";
import { openCodeSeat, startOpenCodeServer, type OpenCodeServer } from "./kit/opencode-server.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";

const bin = requireHarness("opencode");

describe.runIf(bin)("OpenCodeAdapter against the real opencode serve", () => {
  let mock: MockAnthropicServer;
  let server: OpenCodeServer;
  let proxy: HttpFaultProxy;
  const adapter = new OpenCodeAdapter({ clock: frozenClock, promptedWaitMs: 15_000 });

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    server = await startOpenCodeServer(bin!, mock.url);
    proxy = await startHttpFaultProxy(server.url);
  });
  afterAll(async () => {
    mock?.release();
    await proxy?.close();
    await server?.close();
    await mock?.close();
  });

  async function seat(opts: { viaProxy?: boolean; passwordFile?: string } = {}): Promise<SeatOf<"opencode">> {
    const via = { baseUrl: opts.viaProxy ? proxy.url : undefined, passwordFile: opts.passwordFile };
    return openCodeSeat(server, await server.createSession(), via);
  }
  const msg = (text: string, mode: NativeWrite["mode"] = "auto"): NativeWrite => ({
    deliveryId: randomUUID(),
    text,
    mode,
    conversationId: "c1",
  });

  async function untilWorking(s: SeatRecord): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if ((await adapter.inspect(s)).snapshot.status === "working") return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the session never showed running");
  }

  it("an idle session takes a message as a new turn (v1 prompt_async): delivered once a turn answers our message id, receipt = that id", async () => {
    const s = await seat();
    const m = msg(`idle hello ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.Delivered);
    // Rule 41: delivered → consumed.
    expect(v.deliveryStage).toBe("consumed");
    const [sid, messageId] = (v.nativeReceiptId ?? "").split("#");
    expect(sid).toBe(s.control!.sessionId);
    expect(deliveryIdOf(messageId ?? "")).toBe(m.deliveryId);
    await mock.waitForRequest(m.text);
    expect(mock.userMessagesContaining(m.text)).toBe(1);
  });

  it("a session busy with a v1 turn offers queue only: explicit steer is refused before sending, explicit queue is stored once and runs after the turn", async () => {
    const s = await seat();
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(adapter, s, hold)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(hold.text);
    await untilWorking(s);
    expect((await adapter.inspect(s)).snapshot.inputCapabilities.deliveryModes).toEqual(["queue"]);
    const steer = msg(`steer-now ${randomUUID()}`, "steer");
    const queue = msg(`queue-later ${randomUUID()}`, "queue");
    const sv = await deliverTo(adapter, s, steer);
    const qv = await deliverTo(adapter, s, queue);
    expect(sv).toMatchObject({ result: AgentResult.Rejected, reason: "delivery_mode_unsupported" });
    expect(qv.result).toBe(AgentResult.Queued);
    // Rule 41: stored while the turn runs (busy) → stored, not yet consumed.
    expect(qv.deliveryStage).toBe("stored");
    expect(qv.detail).toContain("while a turn runs");
    mock.release();
    await mock.waitForRequest(queue.text);
    expect(mock.userMessagesContaining(queue.text)).toBe(1);
    expect(mock.userMessagesContaining(steer.text)).toBe(0);
    expect((await adapter.readSession(s, 0)).entries.map((e) => e.deliveryId)).toEqual([
      hold.deliveryId,
      queue.deliveryId,
    ]);
  });

  it("a run another client started through v2 is joined through v2: explicit steer is admitted once (stored) and reaches the model once", async () => {
    const s = await seat();
    const hold = `hold v2 ${randomUUID()}`;
    const auth = {
      authorization: `Basic ${Buffer.from(`opencode:${server.password}`).toString("base64")}`,
      "content-type": "application/json",
    };
    const started = await fetch(`${server.url}/api/session/${s.control!.sessionId}/prompt`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ prompt: { text: hold }, delivery: "queue" }),
    });
    expect(started.status).toBe(200);
    await mock.waitForRequest(hold);
    await untilWorking(s);
    expect((await adapter.inspect(s)).snapshot.inputCapabilities.deliveryModes).toEqual(["steer", "queue"]);
    const steer = msg(`steer-now ${randomUUID()}`, "steer");
    const sv = await deliverTo(adapter, s, steer);
    expect(sv.result).toBe(AgentResult.Steered);
    expect(sv.deliveryStage).toBe("stored");
    expect(sv.nativeReceiptId).toMatch(new RegExp(`^${s.control!.sessionId}#\\d+$`));
    mock.release();
    await mock.waitForRequest(steer.text);
    expect(mock.userMessagesContaining(steer.text)).toBe(1);
    expect((await adapter.readSession(s, 0)).entries.map((e) => e.deliveryId)).toEqual([steer.deliveryId]);
  });

  it("stop interrupts a running turn and reports stopped only after the session shows idle", async () => {
    const s = await seat();
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(adapter, s, hold)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(hold.text);
    await untilWorking(s);
    const r = await adapter.stop(s);
    expect(r.result).toBe("stopped");
    expect((await adapter.inspect(s)).snapshot.status).toBe("idle");
    expect((await adapter.stop(s)).result).toBe("already_finished");
  });

  it("the receipt is matched by our id: the session's stored messages hold our delivery id in our message id", async () => {
    const s = await seat();
    const m = msg(`match me ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    const read = await adapter.readSession(s, 0);
    expect(read.complete).toBe(true);
    expect(read.entries.map((e) => e.deliveryId)).toEqual([m.deliveryId]);
    expect(read.entries[0]!.nativeReceiptId).toBe(v.nativeReceiptId);
    const h = await fetch(`${server.url}/session/${s.control!.sessionId}/message`, {
      headers: { authorization: `Basic ${Buffer.from(`opencode:${server.password}`).toString("base64")}` },
    });
    const rows = (await h.json()) as { info: { id: string; role: string } }[];
    expect(rows.filter((r) => r.info.role === "user").map((r) => deliveryIdOf(r.info.id))).toEqual([m.deliveryId]);
  });

  it("a response lost after the prompt reached OpenCode is unconfirmed and never written a second time", async () => {
    const s = await seat({ viaProxy: true });
    proxy.rules = [{ method: "POST", pathMatch: /\/prompt_async(\?|$)/, fault: "lose_response", times: 1 }];
    const m = msg(`lost answer ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.Unconfirmed);
    expect(v.reason).toBe("response_lost");
    expect(v.deliveryStage).toBe("uncertain");
    expect(proxy.forwarded.filter((f) => f.startsWith("POST") && f.includes("/prompt_async"))).toHaveLength(1);
    // Rule 41: the uncertain delivery blocks even an explicit retry of it: nothing leaves the agent.
    for (const mode of ["queue", "auto"] as const) {
      const retry = await deliverTo(adapter, s, { ...m, mode });
      expect(retry).toMatchObject({
        result: AgentResult.Unconfirmed,
        reason: "uncertain_original",
        deliveryStage: "uncertain",
      });
    }
    expect(proxy.forwarded.filter((f) => f.startsWith("POST") && f.includes("/prompt_async"))).toHaveLength(1);
    // The next message's model call carries the whole conversation: the lost one is in it exactly once.
    const next = msg(`after the loss ${randomUUID()}`);
    const nv = await deliverTo(adapter, s, next);
    expect([AgentResult.Delivered, AgentResult.Queued]).toContain(nv.result);
    await mock.waitForRequest(next.text);
    expect(mock.userMessagesContaining(m.text)).toBe(1);
    expect((await adapter.readSession(s, 0)).entries.map((e) => e.deliveryId)).toEqual([m.deliveryId, next.deliveryId]);
  });

  it("a 204 from prompt_async is no receipt: when our message id cannot be read back the write is unconfirmed, never resent, and reached the model once", async () => {
    const s = await seat({ viaProxy: true });
    const quick = new OpenCodeAdapter({ clock: frozenClock, promptedWaitMs: 2000 });
    proxy.rules = [{ method: "GET", pathMatch: /\/session\/[^/]+\/message\/msg_/, fault: "hide" }];
    try {
      const m = msg(`unreadable receipt ${randomUUID()}`);
      const v = await deliverTo(quick, s, m);
      expect(v).toMatchObject({
        result: AgentResult.Unconfirmed,
        reason: "receipt_missing",
        deliveryStage: "uncertain",
      });
      expect(await deliverTo(quick, s, { ...m, mode: "queue" })).toMatchObject({
        result: AgentResult.Unconfirmed,
        reason: "uncertain_original",
      });
      expect(
        proxy.forwarded.filter(
          (f) => f.startsWith("POST") && f.includes(s.control!.sessionId as string) && f.includes("/prompt_async"),
        ),
      ).toHaveLength(1);
      await mock.waitForRequest(m.text);
      expect(mock.userMessagesContaining(m.text)).toBe(1);
    } finally {
      proxy.rules = [];
    }
  });

  it("an HTTP 5xx on the prompt is a typed unconfirmed outcome with no retry", async () => {
    const s = await seat({ viaProxy: true });
    proxy.rules = [{ method: "POST", pathMatch: /\/prompt_async(\?|$)/, fault: "status_502", times: 1 }];
    const m = msg(`five hundred ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.Unconfirmed);
    expect(v.reason).toBe("opencode_error");
    expect(
      proxy.forwarded.filter((f) => f.includes(s.control!.sessionId as string) && f.includes("/prompt_async")),
    ).toHaveLength(0);
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });

  it("a model stream dropped mid-reply leaves the delivery typed and written once", async () => {
    const s = await seat();
    const m = msg(`drop ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect([AgentResult.Delivered, AgentResult.Queued]).toContain(v.result);
    await mock.waitForRequest(m.text);
    expect(mock.userMessagesContaining(m.text)).toBe(1);
    expect((await adapter.readSession(s, 0)).entries).toHaveLength(1);
  });

  it("explicit steer to an idle session is refused before sending, and nothing reaches the model", async () => {
    const s = await seat();
    const m = msg(`never steer ${randomUUID()}`, "steer");
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.Rejected);
    expect(v.reason).toBe("delivery_mode_unsupported");
    expect((await adapter.readSession(s, 0)).entries).toHaveLength(0);
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });

  it("a server without the v2 API falls back to v1 prompt_async with our message id, queue only", async () => {
    const s = await seat({ viaProxy: true });
    proxy.rules = [{ pathMatch: /^\/api\//, fault: "hide" }];
    try {
      const snap = (await adapter.inspect(s)).snapshot;
      expect(snap.inputCapabilities.deliveryModes).toEqual(["queue"]);
      const steer = await deliverTo(adapter, s, msg(`v1 steer ${randomUUID()}`, "steer"));
      expect(steer.result).toBe(AgentResult.Rejected);
      const m = msg(`v1 hello ${randomUUID()}`);
      const v = await deliverTo(adapter, s, m);
      expect(v.result).toBe(AgentResult.Delivered);
      await mock.waitForRequest(m.text);
      expect(mock.userMessagesContaining(m.text)).toBe(1);
      expect((await adapter.readSession(s, 0)).entries.map((e) => e.deliveryId)).toEqual([m.deliveryId]);
    } finally {
      proxy.rules = [];
    }
  });

  it("a wrong basic-auth password refutes the seat's proof, so nothing is sent", async () => {
    const s = await seat();
    const { writeFileSync } = await import("node:fs");
    const bad = `${server.dir}/wrong-password`;
    writeFileSync(bad, "not-the-password");
    s.control = { ...s.control!, passwordFile: bad };
    const m = msg(`unauthorised ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.NotSent);
    expect(v.detail).toContain("401");
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });
});
