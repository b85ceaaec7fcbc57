/**
 * `clankie mcp`, the lead's stdio bridge (ADR 0207 VUH-1638; rules 5, 8, 10; scenario 20),
 * under the MCP SDK's own stdio client, against a real controller process that the tests
 * kill and restart, real node agents and mailbox seats. A recording proxy between the bridge
 * and the controller counts every tools/call that reached the controller, so "never replayed"
 * is counted on the wire, not inferred from the journal's dedupe.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { create } from "@bufbuild/protobuf";
import { AddSeatRequestSchema } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { SeatKind } from "../../shared/gen/clankie/fleet/v1/seat_pb.js";
import { readToken } from "../../controller/state-dir.js";
import { MailboxStore } from "../../node-agent/mailbox/store.js";
import { prepareStore, tempDir } from "../kit/test-db.js";
import { CLI, assertBuilt } from "../kit/cli.js";
import { startBridgeProcess as startBridge, type BridgeProcess as Bridge } from "../kit/bridge-process.js";
import { startAgentProcess, type AgentProcess } from "../kit/agent-process.js";
import { ownerOf } from "../kit/owner.js";
import { startMcpFaultProxy, type McpFaultProxy } from "../fixtures/mcp-fault-proxy.js";

const driver = process.env.DATABASE_URL ? "postgres" : "pglite";

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, tries = 400): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe(`clankie mcp, the lead's stdio bridge (real controller process, ${driver})`, () => {
  let store: Awaited<ReturnType<typeof prepareStore>>;
  let port: number;
  let agentPort: number;
  let controller: ChildProcess;
  let fast: AgentProcess;
  let slow: AgentProcess;
  let proxy: McpFaultProxy;
  let viaProxy: Bridge;
  const env = (): Record<string, string> => (store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {});
  const owner = () => ownerOf(`http://127.0.0.1:${port}`, readToken(store.stateDir, "owner")!);
  const inbox = () => new MailboxStore(join(store.stateDir, "agent", "mailboxes"));
  let slowDir: string;
  const stuck = () => new MailboxStore(join(slowDir, "agent", "mailboxes"));
  const copies = (m: MailboxStore, seat: string, text: string) =>
    m.list(seat).entries.filter((e) => e.text === text).length;

  const startController = async () => {
    controller = spawn(
      process.execPath,
      [
        CLI,
        "controller",
        "--json",
        "--state-dir",
        store.stateDir,
        "--port",
        String(port),
        "--agent-port",
        String(agentPort),
        "--deliver-timeout-ms",
        "60000",
        "--log-level",
        "error",
      ],
      {
        env: { ...process.env, ...env() },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: controller.stdout! }).once("line", () => resolve());
      controller.once("exit", (code) => reject(new Error(`controller exited with ${code}`)));
    });
  };
  const killController = async () => {
    const gone = new Promise((r) => controller.once("exit", r));
    controller.kill("SIGKILL");
    await gone;
  };
  const bothOnline = () =>
    until("both agents online", async () => {
      const ms = await owner()
        .status.listMachines({})
        .catch(() => ({ machines: [] }));
      return ["fast", "slow"].every((n) => ms.machines.some((m) => m.name === n && m.online)) ? true : undefined;
    }).then(() =>
      // Online is the heartbeat; the controller reaches an agent only over the reverse link the
      // agent dials after registering (ADR 0021). Adding an existing seat again rides that link.
      until("both reverse links up", async () => {
        const ok = await Promise.all(
          [
            ["fast", "inbox"],
            ["slow", "stuck"],
          ].map(([machine, name]) =>
            owner()
              .owner.addSeat(create(AddSeatRequestSchema, { machine, name, kind: SeatKind.MAILBOX }))
              .then(
                () => true,
                () => false,
              ),
          ),
        );
        return ok.every(Boolean) ? true : undefined;
      }),
    );

  beforeAll(async () => {
    assertBuilt();
    store = await prepareStore(driver);
    port = await freePort();
    // A fixed agent port too: the agents redial the same https address after each restart (ADR 0021).
    agentPort = await freePort();
    await startController();
    slowDir = tempDir("slow");
    mkdirSync(slowDir, { recursive: true });
    fast = await startAgentProcess({
      controllerUrl: `https://127.0.0.1:${agentPort}`,
      stateDir: store.stateDir,
      machine: "fast",
      joinToken: await owner().enroll("fast"),
    });
    slow = await startAgentProcess({
      controllerUrl: `https://127.0.0.1:${agentPort}`,
      stateDir: slowDir,
      machine: "slow",
      joinToken: await owner().enroll("slow"),
    });
    await bothOnline();
    await owner().owner.addSeat(
      create(AddSeatRequestSchema, { machine: "fast", name: "inbox", kind: SeatKind.MAILBOX }),
    );
    await owner().owner.addSeat(
      create(AddSeatRequestSchema, { machine: "slow", name: "stuck", kind: SeatKind.MAILBOX }),
    );
    proxy = await startMcpFaultProxy(`http://127.0.0.1:${port}`);
    viaProxy = await startBridge(["--url", `${proxy.url}/mcp`, "--token-file", join(store.stateDir, "lead.token")], {});
  });

  afterAll(async () => {
    await viaProxy?.close().catch(() => {});
    await proxy?.close();
    await fast?.stop().catch(() => {});
    await slow?.stop().catch(() => {});
    if (controller && controller.exitCode === null && controller.signalCode === null) await killController();
    await store?.cleanup();
  });

  it("serves the controller's lead tools unchanged over stdio", async () => {
    const listed = (await viaProxy.client.listTools()).tools;
    const direct = await (async () => {
      const { connectLead } = await import("../kit/mcp-client.js");
      const lead = await connectLead(`http://127.0.0.1:${port}/mcp`, readToken(store.stateDir, "lead")!);
      try {
        return (await lead.client.listTools()).tools;
      } finally {
        await lead.close();
      }
    })();
    expect(listed.map((t) => t.name).sort()).toContain("message_seat");
    expect(listed).toEqual(direct);
  });

  it("mints the deliveryId before dispatch and carries it in _meta['clankie/seat-call']; the controller's answer is passed through", async () => {
    const r = await viaProxy.call("message_seat", { seat: "fast/inbox", message: "minted by the bridge" });
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({ outcome: "delivered" });
    const id = r.structuredContent!.deliveryId as string;
    const sent = proxy.calls.filter((c) => c.tool === "message_seat").at(-1)!;
    expect(sent.seatCallId).toBe(id);
    expect(r._meta).toEqual({ "clankie/seat-call": { id, tool: "message_seat", state: "settled", deliveryId: id } });
    expect(
      inbox()
        .list("inbox")
        .entries.find((e) => e.text === "minted by the bridge")?.deliveryId,
    ).toBe(id);
  });

  it("rule 5: the bridge mints the hireId for hire_agent before dispatch; the controller's receipt is under that id", async () => {
    const work = tempDir("hire-work");
    mkdirSync(work, { recursive: true });
    const r = await viaProxy.call("hire_agent", {
      machine: "fast",
      harness: "codex",
      workingDirectory: work,
      title: "w",
      role: "r",
    });
    const sent = proxy.calls.filter((c) => c.tool === "hire_agent").at(-1)!;
    // Without the bridge's id, the wire carries none and the controller mints its own.
    expect(sent.seatCallId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({ hireId: sent.seatCallId });
    expect(proxy.callsWithId(sent.seatCallId!)).toBe(1);
  });

  it("rule 10: a retired generation drains: a call pending on it keeps its answer stream while the next call opens a new session", async () => {
    expect((await viaProxy.call("list_seats", {})).isError).toBeFalsy();
    slow.freeze();
    const pending = viaProxy.call("message_seat", { seat: "slow/stuck", message: "pending across the retirement" });
    const pendingId = await until(
      "the pending receipt",
      async () =>
        (await owner().receipts()).find((r) => r.seatId === "slow/stuck" && r.state === "dispatching")?.deliveryId,
    );
    const oldSession = proxy.calls.find((c) => c.seatCallId === pendingId)!.session;
    // The controller refuses the next call as an unknown session: the bridge retires the generation.
    proxy.rules = [{ tool: "message_seat", fault: "unknown_session_before_admission" }];
    const next = await viaProxy.call("message_seat", { seat: "fast/inbox", message: "after the retirement" });
    expect(next.structuredContent, JSON.stringify(next)).toMatchObject({ outcome: "delivered" });
    expect(proxy.calls.filter((c) => c.seatCallId === next.structuredContent!.deliveryId).at(-1)!.session).not.toBe(
      oldSession,
    );
    slow.thaw();
    // Closing the retired client would have ended this call's stream: uncertain instead of its answer.
    const r = await pending;
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({ outcome: "delivered", deliveryId: pendingId });
    expect(proxy.callsWithId(pendingId)).toBe(1);
    expect(copies(stuck(), "stuck", "pending across the retirement")).toBe(1);
  });

  it("two overlapping calls share one session; the controller dies mid-flight: the answered one stands, the other is typed uncertain with its id, and nothing is replayed", async () => {
    slow.freeze();
    const pending = viaProxy.call("message_seat", { seat: "slow/stuck", message: "in flight at the crash" });
    const stuckId = await until(
      "the in-flight receipt",
      async () =>
        (await owner().receipts()).find((r) => r.seatId === "slow/stuck" && r.state === "dispatching")?.deliveryId,
    );
    const answered = await viaProxy.call("message_seat", { seat: "fast/inbox", message: "answered before the crash" });
    expect(answered.structuredContent).toMatchObject({ outcome: "delivered" });
    const [a, b] = [
      proxy.calls.find((c) => c.seatCallId === stuckId)!,
      proxy.calls.find((c) => c.seatCallId === answered.structuredContent!.deliveryId)!,
    ];
    expect(a.session).toBeDefined();
    expect(b.session).toBe(a.session);

    await killController();
    const lost = await pending;
    expect(lost.isError).toBe(true);
    expect(lost.structuredContent).toMatchObject({
      outcome: "uncertain",
      deliveryStage: "uncertain",
      deliveryId: stuckId,
      tool: "message_seat",
      reconcileTool: "reconcile_seat_call",
    });
    expect(lost._meta).toEqual({
      "clankie/seat-call": { id: stuckId, tool: "message_seat", state: "uncertain", deliveryId: stuckId },
    });

    await startController();
    slow.thaw();
    await bothOnline();
    const rec = await viaProxy.call("reconcile_seat_call", { deliveryId: stuckId });
    expect(rec.structuredContent, JSON.stringify(rec.structuredContent)).toMatchObject({ deliveryId: stuckId });
    // The thawed agent may still be writing it (uncertain), have written it, or never will (its mailbox
    // fenced the id: not sent, issue 32 item 6); never twice, and the mailbox agrees with the answer.
    expect(["uncertain", "delivered", "undelivered"]).toContain(rec.structuredContent!.outcome);
    expect(proxy.callsWithId(stuckId)).toBe(1);
    expect(copies(stuck(), "stuck", "in flight at the crash")).toBeLessThanOrEqual(1);
    if (rec.structuredContent!.outcome === "undelivered") {
      expect(rec.structuredContent).toMatchObject({ state: "not_sent", reason: "proven_absent" });
      await new Promise((r) => setTimeout(r, 500));
      expect(copies(stuck(), "stuck", "in flight at the crash")).toBe(0);
    }
    expect((await owner().receipts()).filter((r) => r.deliveryId === stuckId)).toHaveLength(1);
    expect(copies(inbox(), "inbox", "answered before the crash")).toBe(1);
  });

  it("a controller restart between two calls is invisible to the lead: the session outlives it (its id is signed for the fleet, ADR 0037), delivered once, no retry (no flags: the state dir's controller and lead token)", async () => {
    const bridge = await startBridge([], { CLANKIE_STATE_DIR: store.stateDir });
    try {
      expect(
        (await bridge.call("message_seat", { seat: "fast/inbox", message: "before the restart" })).structuredContent,
      ).toMatchObject({ outcome: "delivered" });
      await killController();
      await startController();
      await bothOnline();
      const after = await bridge.call("message_seat", { seat: "fast/inbox", message: "after the restart" });
      expect(after.structuredContent, JSON.stringify(after)).toMatchObject({ outcome: "delivered" });
      expect(bridge.stderr()).not.toContain("retrying once");
      expect(copies(inbox(), "inbox", "after the restart")).toBe(1);
      expect(
        (await owner().receipts()).filter((r) => r.deliveryId === after.structuredContent!.deliveryId),
      ).toHaveLength(1);
    } finally {
      await bridge.close();
    }
  });

  it("an explicit unknown_session before admission: one retry in a new session, delivered once, one call past the refusal", async () => {
    proxy.rules = [{ tool: "message_seat", fault: "unknown_session_before_admission" }];
    const r = await viaProxy.call("message_seat", {
      seat: "fast/inbox",
      message: "refused once as an unknown session",
    });
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({ outcome: "delivered" });
    const id = r.structuredContent!.deliveryId as string;
    // Two on the wire: the refused one (never forwarded) and the retry.
    expect(proxy.callsWithId(id)).toBe(2);
    expect(viaProxy.stderr()).toContain("retrying once in a new session");
    expect(copies(inbox(), "inbox", "refused once as an unknown session")).toBe(1);
    expect((await owner().receipts()).filter((x) => x.deliveryId === id)).toHaveLength(1);
  });

  it("an unknown_session that arrives after admission is not retried: typed uncertainty with the original id, one call on the wire, one copy", async () => {
    // The previous test restarted the controller: this call renews the bridge's session first.
    expect((await viaProxy.call("list_seats", {})).isError).toBeFalsy();
    proxy.rules = [{ tool: "message_seat", fault: "unknown_session_after_admission" }];
    const before = proxy.calls.length;
    const r = await viaProxy.call("message_seat", { seat: "fast/inbox", message: "admitted, then unknown_session" });
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({ outcome: "uncertain", tool: "message_seat" });
    const id = r.structuredContent!.deliveryId as string;
    expect(proxy.calls.slice(before).filter((c) => c.tool === "message_seat")).toHaveLength(1);
    expect(proxy.callsWithId(id)).toBe(1);
    expect(copies(inbox(), "inbox", "admitted, then unknown_session")).toBe(1);
    const rec = await viaProxy.call("reconcile_seat_call", { deliveryId: id });
    expect(rec.structuredContent).toMatchObject({ outcome: "delivered", deliveryId: id });
    expect(proxy.callsWithId(id)).toBe(1);
  });

  it("a network cut after the call reached the controller is typed uncertainty with the original id and is never replayed; the next call opens a new session", async () => {
    proxy.rules = [{ tool: "message_seat", fault: "cut_after_forward" }];
    const r = await viaProxy.call("message_seat", { seat: "fast/inbox", message: "cut on the way back" });
    expect(r.structuredContent, JSON.stringify(r)).toMatchObject({
      outcome: "uncertain",
      tool: "message_seat",
      reason: "result_lost",
    });
    const id = r.structuredContent!.deliveryId as string;
    const cutSession = proxy.calls.find((c) => c.seatCallId === id)!.session;
    await until("the effect", () => (copies(inbox(), "inbox", "cut on the way back") === 1 ? true : undefined));
    const next = await viaProxy.call("message_seat", { seat: "fast/inbox", message: "after the cut" });
    expect(next.structuredContent).toMatchObject({ outcome: "delivered" });
    expect(proxy.calls.find((c) => c.seatCallId === next.structuredContent!.deliveryId)!.session).not.toBe(cutSession);
    expect(proxy.callsWithId(id)).toBe(1);
    expect(copies(inbox(), "inbox", "cut on the way back")).toBe(1);
  });
});
