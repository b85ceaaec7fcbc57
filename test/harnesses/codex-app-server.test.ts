/**
 * The Codex adapter against a real `codex app-server` (pinned @openai/codex, installed by
 * `npm run harnesses:install -- codex`) whose model is the local mock Responses server. A
 * driver connection plays the pane's user: it owns the thread and starts slow turns. Every
 * delivery goes through the agent's real pipeline (deliver.ts), and what reached the model
 * is read from the mock's record.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { deliver, type DeliverCommand } from "../../node-agent/deliver/deliver.js";
import { AdapterRegistry } from "../../node-agent/harnesses/registry.js";
import { CodexAdapter, type CodexControl } from "../../node-agent/harnesses/codex/adapter.js";
import { CodexConnection } from "../../node-agent/harnesses/codex/connection.js";
import { listQueue, observeThread } from "../../node-agent/harnesses/codex/thread.js";
import { SeatBook } from "../../node-agent/seats/seat-book.js";
import { systemMonotonicClock } from "../../node-agent/proofs/proof.js";
import type { SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockResponsesServer, SLOW_MARKER, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { cleanupCodexEnv, makeCodexEnv, startAppServer, type CodexEnv } from "./kit/codex-env.js";
import { startLossyProxy } from "./kit/codex-lossy-proxy.js";

const bin = requireHarness("codex");

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

describe("CodexAdapter against a real codex app-server", () => {
  let mock: MockResponsesServer;
  let cx: CodexEnv;
  let server: ChildProcess;
  let sock: string;
  let driver: CodexConnection;
  let adapter: CodexAdapter;
  let seats: SeatBook;
  const adapters = new AdapterRegistry();
  let n = 0;

  beforeAll(async () => {
    // Absent and not required: every test here fails loudly rather than passing or skipping.
    if (!bin) throw new Error("codex is not installed in .harnesses/codex: run `npm run harnesses:install -- codex`");
    mock = await startMockResponsesServer();
    cx = makeCodexEnv(bin!, mock.baseUrl);
    sock = join(cx.root, "own.sock");
    server = await startAppServer(bin!, cx, sock);
    const d = await CodexConnection.open(sock);
    if (!d.ok) throw new Error(d.message);
    driver = d.connection;
    adapter = new CodexAdapter({ clock: systemMonotonicClock });
    adapters.register(adapter);
    seats = new SeatBook(cx.root);
  });

  afterAll(async () => {
    adapter?.close();
    driver?.close();
    if (server?.pid) process.kill(-server.pid, "SIGKILL");
    if (cx) cleanupCodexEnv(bin!, cx);
    await mock?.close();
  });

  /** A fresh thread (as the pane's TUI would own it) and a seat bound to it on `endpoint`. */
  async function newSeat(endpoint = sock): Promise<{ seat: SeatRecord; threadId: string }> {
    const t = await driver.call<{ thread: { id: string } }>("thread/start", { cwd: cx.workDir });
    if (!t.ok) throw new Error(t.message);
    const threadId = t.result.thread.id;
    // Recorded as an owned seat (as discovery records a TUI its hire launched, rules 36/47): these cases drive interrupt too.
    const control: CodexControl = {
      codexHome: cx.codexHome,
      cwd: cx.workDir,
      launch: "direct",
      endpoint,
      threadId,
      ownedByHire: crypto.randomUUID(),
    };
    const seat: SeatRecord = {
      name: `codex-direct-${++n}`,
      kind: SeatKind.Codex,
      title: "direct",
      occupantId: `codex:direct:${threadId}`,
      createdAtMs: Date.now(),
      control: { ...control },
    };
    seats.putDiscovered(seat);
    return { seat, threadId };
  }

  /** The driver starts a turn that stays active until the mock is released. */
  async function slowTurn(threadId: string, label: string): Promise<string> {
    const r = await driver.call<{ turn: { id: string } }>("turn/start", {
      threadId,
      input: [{ type: "text", text: `${label} ${SLOW_MARKER}`, text_elements: [] }],
    });
    if (!r.ok) throw new Error(r.message);
    await mock.waitFor((q) => q.lastUserText.includes(label));
    return r.result.turn.id;
  }

  async function idle(threadId: string): Promise<void> {
    await until(async () => {
      const o = await observeThread(driver, threadId);
      return o.ok && o.value.status === "idle" ? true : undefined;
    }, `thread ${threadId} idle`);
  }

  const cmd = (seat: SeatRecord, text: string, mode: DeliverCommand["mode"]): DeliverCommand => ({
    seatName: seat.name,
    deliveryId: crypto.randomUUID(),
    text,
    mode,
    conversationId: "c1",
    occupantId: seat.occupantId,
    authorityAgeMs: 0,
    arrivedAtMs: systemMonotonicClock.nowMs(),
  });
  const deps = () => ({ seats, adapters, clock: systemMonotonicClock });

  it("idle start: Auto on an idle thread starts a turn, confirmed by the userMessage carrying our clientUserMessageId", async () => {
    const { seat, threadId } = await newSeat();
    const { snapshot } = await adapter.inspect(seat);
    expect(snapshot).toMatchObject({
      status: "idle",
      inputCapabilities: { deliveryModes: ["steer", "queue"], interrupt: true, nextTurnOnly: false },
    });
    const c = cmd(seat, "idle start please", "auto");
    const v = await deliver(deps(), c);
    expect(v.result).toBe(AgentResult.Started);
    expect(v.nativeReceiptId).toMatch(new RegExp(`^${threadId}/`));
    await mock.waitFor((q) => q.lastUserText === "idle start please");
    await idle(threadId);
    expect(mock.countRequestsWith("idle start please", "last")).toBe(1);
  });

  it("steer with the exact expectedTurnId joins the active turn: steered, and the model sees it in that turn", async () => {
    const { seat, threadId } = await newSeat();
    await slowTurn(threadId, "long task A");
    const v = await deliver(deps(), cmd(seat, "steer: also check the docs", "steer"));
    expect(v.result).toBe(AgentResult.Steered);
    const req = await mock.waitFor((q) => q.lastUserText === "steer: also check the docs");
    expect(req.userTexts.some((t) => t.includes("long task A"))).toBe(true);
    mock.releaseSlow();
    await idle(threadId);
  });

  it("a turn that changed between proof and write refuses the steer (wrong expectedTurnId): rejected, nothing written, no fallback", async () => {
    const { seat, threadId } = await newSeat();
    const first = await slowTurn(threadId, "turn one");
    await adapter.inspect(seat); // proves turn one
    await driver.call("turn/interrupt", { threadId, turnId: first });
    await idle(threadId);
    await slowTurn(threadId, "turn two");
    const r = await adapter.write(seat, {
      deliveryId: crypto.randomUUID(),
      text: "late steer",
      mode: "steer",
      conversationId: "c1",
    });
    expect(r).toMatchObject({ result: AgentResult.Rejected, reason: "turn_changed" });
    expect(r.detail).toContain(first);
    mock.releaseSlow();
    await idle(threadId);
    const q = await listQueue(driver, threadId);
    expect(q.ok && q.value).toEqual([]);
    expect(mock.countRequestsWith("late steer")).toBe(0);
  });

  it("explicit Steer on an idle thread is a reasoned pre-send refusal, never a new turn or a queue entry", async () => {
    const { seat, threadId } = await newSeat();
    const v = await deliver(deps(), cmd(seat, "steer into nothing", "steer"));
    expect(v).toMatchObject({ result: AgentResult.Rejected, reason: "no_active_turn" });
    const q = await listQueue(driver, threadId);
    expect(q.ok && q.value).toEqual([]);
    expect(mock.countRequestsWith("steer into nothing")).toBe(0);
  });

  it("queue while busy: queued_until_turn_end, and Codex runs it by itself once the turn completes", async () => {
    const { seat, threadId } = await newSeat();
    await slowTurn(threadId, "busy B");
    const explicit = await deliver(deps(), cmd(seat, "queued explicitly", "queue"));
    expect(explicit.result).toBe(AgentResult.Queued);
    expect(explicit.detail).toContain("queued_until_turn_end");
    const auto = await deliver(deps(), cmd(seat, "queued by auto", "auto"));
    expect(auto.result).toBe(AgentResult.Queued);
    expect(mock.countRequestsWith("queued explicitly")).toBe(0);
    mock.releaseSlow();
    await mock.waitFor((q) => q.lastUserText === "queued explicitly");
    await mock.waitFor((q) => q.lastUserText === "queued by auto");
    await idle(threadId);
  });

  it("queue then interrupt: the turn stops, and the queued message stays queued and never runs", async () => {
    const { seat, threadId } = await newSeat();
    await slowTurn(threadId, "busy C");
    const v = await deliver(deps(), cmd(seat, "queued before stop", "queue"));
    expect(v.result).toBe(AgentResult.Queued);
    const stopped = await adapter.stop(seat);
    expect(stopped.result).toBe("stopped");
    expect(stopped.detail).toContain("will not run by themselves");
    await idle(threadId);
    const q = await listQueue(driver, threadId);
    expect(q.ok && q.value.map((x) => x.text)).toEqual(["queued before stop"]);
    expect(mock.countRequestsWith("queued before stop")).toBe(0);
    expect((await adapter.stop(seat)).result).toBe("already_finished");
    await driver.call("thread/queue/delete", { threadId, queuedSubmissionId: q.ok ? q.value[0]!.queuedId : "" });
  });

  for (const how of ["cut", "garble"] as const) {
    it(`a lost answer after the steer was written (${how}) is unconfirmed: no queue fallback, no second send — one copy reached the model`, async () => {
      const proxy = await startLossyProxy(sock, join(cx.root, `lossy-${how}.sock`), { dropAfter: "turn/steer", how });
      try {
        const { seat, threadId } = await newSeat(proxy.socketPath);
        await slowTurn(threadId, `busy D ${how}`);
        const text = `steer whose answer is lost (${how})`;
        const v = await deliver(deps(), cmd(seat, text, "steer"));
        expect(v).toMatchObject({ result: AgentResult.Unconfirmed, reason: "response_lost" });
        expect(proxy.forwarded.get("turn/steer")).toBe(1);
        expect(proxy.forwarded.get("thread/queue/add") ?? 0).toBe(0);
        expect(proxy.forwarded.get("turn/start") ?? 0).toBe(0);
        // The write did happen: the model got it, exactly once, in the steered turn.
        await mock.waitFor((q) => q.lastUserText === text);
        mock.releaseSlow();
        await idle(threadId);
        expect(mock.countRequestsWith(text, "last")).toBe(1);
        expect(mock.maxCopiesInOneRequest(text)).toBe(1);
        const q = await listQueue(driver, threadId);
        expect(q.ok && q.value).toEqual([]);
      } finally {
        await proxy.close();
      }
    });
  }

  it("the read session lists what reached the thread by our delivery ids, for reconciliation", async () => {
    const { seat, threadId } = await newSeat();
    const c = cmd(seat, "remember me", "auto");
    expect((await deliver(deps(), c)).result).toBe(AgentResult.Started);
    await idle(threadId);
    const read = await adapter.readSession(seat, 0);
    expect(read.complete).toBe(true);
    expect(read.entries.map((e) => e.deliveryId)).toContain(c.deliveryId);
  });
});
