/**
 * Rule 39 on the Codex side: a write records the exact turn it joined or waited behind before
 * its request leaves, and readSession names that turn's state for the unattended release. The
 * scripted app-server plays a thread that already reads idle while that turn is still in
 * progress (the moment between two states the real binary cannot be made to hold), then the
 * turn completed.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { SeatKind } from "../../../../../shared/verdicts.js";
import { CodexAdapter } from "../../../../../node-agent/harnesses/codex/adapter.js";
import { systemMonotonicClock } from "../../../../../node-agent/proofs/proof.js";
import type { SeatRecord } from "../../../../../node-agent/harnesses/adapter.js";
import { startFakeAppServer, type FakeAppServer } from "../../../../kit/fake-codex-app-server.js";

describe("CodexAdapter.readSession: the write's turn (rule 39)", () => {
  let server: FakeAppServer | undefined;
  let adapter: CodexAdapter | undefined;
  afterEach(async () => {
    adapter?.close();
    await server?.close();
  });

  it("rule 39: the thread idle is not enough; the exact turn the write waited behind must read terminal", async () => {
    const state = { thread: "active", turn: "inProgress" };
    server = await startFakeAppServer((m: { id?: number; method?: string }, ws: WebSocket) => {
      const reply = (result: unknown) => ws.send(JSON.stringify({ id: m.id, result }));
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
              status: { type: state.thread, activeFlags: [] },
            },
          });
        case "thread/turns/list":
          return reply({ data: [{ id: "turn-1", status: state.turn, items: [] }], nextCursor: null });
        case "thread/queue/list":
          return reply({ data: [] });
        case "thread/queue/add":
          return; // the answer is lost: the original stays unresolved
        default:
          return reply({});
      }
    });
    adapter = new CodexAdapter({
      clock: systemMonotonicClock,
      callTimeoutMs: 300,
      confirmTimeoutMs: 200,
      confirmPollMs: 20,
    });
    const seat: SeatRecord = {
      name: "cx",
      kind: SeatKind.Codex,
      title: "",
      occupantId: "occ-1",
      createdAtMs: 0,
      control: { codexHome: "/home/x/.codex", cwd: "/w", launch: "direct", endpoint: server.sock, threadId: "T" },
    };
    await adapter.inspect(seat);
    const deliveryId = crypto.randomUUID();
    const w = await adapter.write(seat, { deliveryId, text: "x", mode: "queue", conversationId: "c" });
    expect(w.result).toBe("unconfirmed");

    // Codex already says idle, but turn-1 (the one the message waited behind) is still in progress.
    state.thread = "idle";
    const early = await adapter.readSession(seat, 0, deliveryId);
    expect(early.status).toBe("idle");
    expect(early.writeTurn).toBe("active");

    state.turn = "completed";
    expect((await adapter.readSession(seat, 0, deliveryId)).writeTurn).toBe("terminal");
    // A delivery this agent never wrote (or wrote before it restarted): its turn is unknown, never terminal.
    expect((await adapter.readSession(seat, 0, crypto.randomUUID())).writeTurn).toBe("unknown");
    // Asked about no delivery, nothing is said of a turn.
    expect((await adapter.readSession(seat, 0)).writeTurn).toBeUndefined();
  });
});
