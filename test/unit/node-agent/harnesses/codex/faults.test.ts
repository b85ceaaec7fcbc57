/**
 * The Codex adapter under bad input from a scripted app-server: a socket that vanishes
 * between proof and write, garbled or ill-shaped replies, another CODEX_HOME, a turn in flux,
 * a write with no fresh proof of the same occupant. Each is a typed outcome, and no write
 * happens that the proofs did not cover.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WebSocket } from "ws";
import { AgentResult, SeatKind } from "../../../../../shared/verdicts.js";
import { CodexAdapter, type CodexControl } from "../../../../../node-agent/harnesses/codex/adapter.js";
import { AdapterRegistry } from "../../../../../node-agent/harnesses/registry.js";
import { SeatBook } from "../../../../../node-agent/seats/seat-book.js";
import { deliver } from "../../../../../node-agent/deliver/deliver.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import type { SeatRecord } from "../../../../../node-agent/harnesses/adapter.js";
import { startFakeAppServer, type FakeAppServer } from "../../../../kit/fake-codex-app-server.js";

const dirs: string[] = [];
/** A state dir for the seat book, removed after the run. */
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cx-faults-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Overrides = Partial<Record<string, (id: number | undefined, ws: WebSocket) => void>>;

/** A thread T with active turn "turn-1", unless a method is overridden. */
function activeThread(o: Overrides = {}) {
  return (m: { id?: number; method?: string; params?: Record<string, unknown> }, ws: WebSocket) => {
    const reply = (result: unknown) => ws.send(JSON.stringify({ id: m.id, result }));
    const custom = o[m.method ?? ""];
    if (custom) return custom(m.id, ws);
    switch (m.method) {
      case "thread/loaded/list":
        return reply({ data: ["T"], nextCursor: null });
      case "thread/read":
        return reply({
          thread: {
            id: "T",
            ephemeral: false,
            cwd: "/w",
            parentThreadId: null,
            status: { type: "active", activeFlags: [] },
          },
        });
      case "thread/turns/list":
        return reply({
          data: [
            {
              id: "turn-1",
              status: "inProgress",
              items: [{ type: "userMessage", id: "item-9", clientId: "c-earlier", content: [] }],
            },
          ],
          nextCursor: null,
        });
      default:
        return reply({});
    }
  };
}

describe("CodexAdapter under bad input", () => {
  let server: FakeAppServer | undefined;
  let adapter: CodexAdapter | undefined;
  afterEach(async () => {
    adapter?.close();
    await server?.close();
    server = undefined;
  });

  function setup(s: FakeAppServer, occupantId = "occ-1") {
    adapter = new CodexAdapter({
      clock: systemMonotonicClock,
      callTimeoutMs: 300,
      confirmTimeoutMs: 200,
      confirmPollMs: 20,
    });
    const control: CodexControl = {
      codexHome: "/home/x/.codex",
      cwd: "/w",
      launch: "direct",
      endpoint: s.sock,
      threadId: "T",
    };
    const seat: SeatRecord = {
      name: "cx",
      kind: SeatKind.Codex,
      title: "",
      occupantId,
      createdAtMs: 0,
      control: { ...control },
    };
    const seats = new SeatBook(tempDir());
    seats.putDiscovered(seat);
    const deps = { seats, adapters: new AdapterRegistry().register(adapter), clock: systemMonotonicClock };
    return { seat, deps, a: adapter };
  }
  const writes = (s: FakeAppServer) =>
    s.received.filter((m) => ["turn/steer", "thread/queue/add", "turn/start"].includes(m.method ?? ""));
  const cmd = (seat: SeatRecord, mode: "auto" | "steer" | "queue") => ({
    seatName: seat.name,
    deliveryId: crypto.randomUUID(),
    text: "hello",
    mode,
    conversationId: "c",
    occupantId: seat.occupantId,
    authorityAgeMs: 0,
    arrivedAtMs: systemMonotonicClock.nowMs(),
  });

  it("a socket that vanishes between proof and write: not_sent control_lost, nothing written", async () => {
    server = await startFakeAppServer(activeThread());
    const { seat, a } = setup(server);
    expect((await a.inspect(seat)).snapshot.inputCapabilities.deliveryModes).toEqual(["steer", "queue"]);
    const s = server;
    await s.close();
    server = undefined;
    await new Promise((r) => setTimeout(r, 20));
    const r = await a.write(seat, { deliveryId: crypto.randomUUID(), text: "x", mode: "steer", conversationId: "c" });
    expect(r).toMatchObject({ result: AgentResult.NotSent, reason: "control_lost" });
    expect(writes(s)).toEqual([]);
  });

  it("a garbled reply while proving: proof unknown, no capabilities, not sent, no write", async () => {
    server = await startFakeAppServer(activeThread({ "thread/read": (_id, ws) => ws.send('{"id":3,"result":{"thre') }));
    const { seat, deps, a } = setup(server);
    const { snapshot, proofs } = await a.inspect(seat);
    expect(proofs.at(-1)).toMatchObject({ kind: "codex_thread", outcome: "unknown" });
    expect(snapshot.inputCapabilities.deliveryModes).toEqual([]);
    expect(await deliver(deps, cmd(seat, "queue"))).toMatchObject({
      result: AgentResult.NotSent,
      reason: "proof_unknown",
    });
    expect(writes(server)).toEqual([]);
  });

  it("an app-server serving another CODEX_HOME is not this pane's control: refuted, nothing written", async () => {
    const other = await startFakeAppServer(activeThread(), "/home/someone-else/.codex");
    server = other;
    const { seat, deps } = setup(other);
    expect(await deliver(deps, cmd(seat, "auto"))).toMatchObject({
      result: AgentResult.NotSent,
      reason: "proof_refuted",
    });
    expect(writes(other)).toEqual([]);
  });

  it("an active thread whose latest turn is not in progress is a turn in flux: unknown, no write", async () => {
    server = await startFakeAppServer(
      activeThread({
        "thread/turns/list": (id, ws) =>
          ws.send(
            JSON.stringify({
              id,
              result: { data: [{ id: "turn-0", status: "completed", items: [] }], nextCursor: null },
            }),
          ),
      }),
    );
    const { seat, deps } = setup(server);
    expect(await deliver(deps, cmd(seat, "steer"))).toMatchObject({
      result: AgentResult.NotSent,
      reason: "proof_unknown",
    });
    expect(writes(server)).toEqual([]);
  });

  it("an answer of the wrong shape after the write is unconfirmed, and nothing else is sent", async () => {
    server = await startFakeAppServer(
      activeThread({ "turn/steer": (id, ws) => ws.send(JSON.stringify({ id, result: { turnId: "turn-7" } })) }),
    );
    const { seat, deps } = setup(server);
    expect(await deliver(deps, cmd(seat, "steer"))).toMatchObject({
      result: AgentResult.Unconfirmed,
      reason: "bad_reply",
    });
    expect(writes(server).map((m) => m.method)).toEqual(["turn/steer"]);
  });

  it("an accepted steer whose userMessage never appears is unconfirmed (receipt_missing), never resent", async () => {
    server = await startFakeAppServer(
      activeThread({ "turn/steer": (id, ws) => ws.send(JSON.stringify({ id, result: { turnId: "turn-1" } })) }),
    );
    const { seat, deps } = setup(server);
    const c = cmd(seat, "steer");
    expect(await deliver(deps, c)).toMatchObject({ result: AgentResult.Unconfirmed, reason: "receipt_missing" });
    expect(writes(server).map((m) => [m.method, m.params?.clientUserMessageId, m.params?.expectedTurnId])).toEqual([
      ["turn/steer", c.deliveryId, "turn-1"],
    ]);
  });

  it("a write needs a fresh proof of the same occupant: none, another occupant's, or one already used is refused", async () => {
    server = await startFakeAppServer(
      activeThread({
        "thread/queue/add": (id, ws) =>
          ws.send(
            JSON.stringify({ id, result: { queuedSubmission: { id: "q1", clientUserMessageId: "will-not-match" } } }),
          ),
      }),
    );
    const { seat, a } = setup(server);
    const msg = { deliveryId: crypto.randomUUID(), text: "x", mode: "queue" as const, conversationId: "c" };
    expect(await a.write(seat, msg)).toMatchObject({ result: AgentResult.NotSent, reason: "no_native_control" });
    await a.inspect(seat);
    expect(await a.write({ ...seat, occupantId: "occ-2" }, msg)).toMatchObject({
      result: AgentResult.NotSent,
      reason: "no_native_control",
    });
    await a.inspect(seat);
    expect(await a.write(seat, msg)).toMatchObject({ result: AgentResult.Unconfirmed, reason: "bad_reply" });
    expect(await a.write(seat, msg)).toMatchObject({ result: AgentResult.NotSent, reason: "no_native_control" });
    expect(writes(server)).toHaveLength(1);
  });
});
