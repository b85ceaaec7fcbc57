/**
 * The Pi adapter against the real `pi --mode rpc` (pinned version), driven by the mock
 * Anthropic server, with HOME and Pi's agent dir under a temp dir. "Written once" is proved
 * from the mock model's record.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Transform } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { PiAdapter } from "../../node-agent/harnesses/pi.js";
import { PiLinkBook } from "../../node-agent/harnesses/pi-links.js";
import { StreamPiLink, startPiRpc, type PiLink } from "../../node-agent/harnesses/pi-link.js";
import type { NativeWrite, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";

const bin = requireHarness("pi");

describe.runIf(bin)("PiAdapter against the real pi --mode rpc", () => {
  let mock: MockAnthropicServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const links = new PiLinkBook();
  const children: ChildProcess[] = [];
  const adapter = new PiAdapter({ clock: frozenClock, links, startWaitMs: 30_000 });
  const args = ["--no-session", "--provider", "mock", "--model", "mock-model"];

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    dir = mkdtempSync(join(tmpdir(), "clankie-pi-"));
    const agentDir = join(dir, "home/.pi/agent");
    mkdirSync(agentDir, { recursive: true });
    mkdirSync(join(dir, "work"));
    writeFileSync(join(agentDir, "models.json"), JSON.stringify({ providers: { mock: { baseUrl: mock.url, api: "anthropic-messages", apiKey: "sk-mock", models: [{ id: "mock-model" }] } } }));
    env = { PATH: process.env.PATH, HOME: join(dir, "home"), PI_CODING_AGENT_DIR: agentDir, XDG_CONFIG_HOME: join(dir, "config"), XDG_DATA_HOME: join(dir, "data"), XDG_CACHE_HOME: join(dir, "cache") };
  });
  afterAll(async () => {
    mock?.release();
    await links.close();
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await mock?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function seatFor(link: PiLink): SeatRecord {
    const name = `pi-${randomUUID().slice(0, 8)}`;
    links.addLaunched(name, link);
    return { name, kind: SeatKind.Pi, title: "pi", occupantId: `pi:${name}`, createdAtMs: Date.now() };
  }
  /** Pi reads commands only once started; a first get_state with a long timeout waits for that. */
  async function ready(link: PiLink): Promise<PiLink> {
    const r = await link.request({ type: "get_state" }, `ready-${randomUUID()}`, 90_000);
    if (r.kind !== "ok") throw new Error(`pi did not start: ${JSON.stringify(r)}`);
    return link;
  }
  const launch = async () => seatFor(await ready(startPiRpc({ bin: bin!, args, cwd: join(dir, "work"), env })));
  const msg = (text: string, mode: NativeWrite["mode"] = "auto"): NativeWrite => ({ deliveryId: randomUUID(), text, mode, conversationId: "c1" });

  async function untilStreaming(s: SeatRecord): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if ((await adapter.inspect(s)).snapshot.status === "working") return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("Pi never showed streaming");
  }

  it("an idle Pi takes a message as a new turn: delivered when its user message starts", async () => {
    const s = await launch();
    const m = msg(`idle hello ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.Delivered);
    expect(v.nativeReceiptId).toContain(m.deliveryId);
    await mock.waitForRequest(m.text);
    expect(mock.userMessagesContaining(m.text)).toBe(1);
    expect((await adapter.readSession(s, 0)).entries.map((e) => e.deliveryId)).toEqual([m.deliveryId]);
  });

  it("a streaming Pi is steered by explicit steer and queued (follow-up) by auto, each written once", async () => {
    const s = await launch();
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(adapter, s, hold)).result).toBe(AgentResult.Delivered);
    // Held only once the mock has the request: releasing earlier would release nothing.
    await mock.waitForRequest(hold.text);
    await untilStreaming(s);
    expect((await adapter.inspect(s)).snapshot.inputCapabilities.deliveryModes).toEqual(["steer", "queue"]);
    const steer = msg(`steer-now ${randomUUID()}`, "steer");
    const later = msg(`follow-later ${randomUUID()}`);
    expect((await deliverTo(adapter, s, steer)).result).toBe(AgentResult.Steered);
    const lv = await deliverTo(adapter, s, later);
    expect(lv.result).toBe(AgentResult.Queued);
    expect(lv.detail).toContain("queued_until_turn_end");
    mock.release();
    await mock.waitForRequest(steer.text);
    await mock.waitForRequest(later.text);
    expect(mock.userMessagesContaining(steer.text)).toBe(1);
    expect(mock.userMessagesContaining(later.text)).toBe(1);
  });

  it("stop aborts a streaming turn and reports stopped only when Pi shows idle", async () => {
    const s = await launch();
    const hold = msg(`hold ${randomUUID()}`);
    await deliverTo(adapter, s, hold);
    await untilStreaming(s);
    expect((await adapter.stop(s)).result).toBe("stopped");
    expect((await adapter.stop(s)).result).toBe("already_finished");
  });

  it("explicit steer to an idle Pi is refused before sending, and nothing reaches the model", async () => {
    const s = await launch();
    const m = msg(`never steer ${randomUUID()}`, "steer");
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.Rejected);
    expect(v.reason).toBe("delivery_mode_unsupported");
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });

  it("Pi's answer is matched by our id; when it is lost after the write the result is unconfirmed and nothing is resent", async () => {
    const child = spawn(bin!, ["--mode", "rpc", ...args], { cwd: join(dir, "work"), env, stdio: ["pipe", "pipe", "ignore"] });
    children.push(child);
    let dropId = "";
    let dropped = 0;
    // A lossy link: the response to our prompt (matched by our id) never arrives.
    const lossy = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        const kept = chunk
          .toString("utf8")
          .split("\n")
          .filter((line) => {
            const hit = dropId !== "" && line.includes(`"id":"${dropId}"`) && line.includes('"type":"response"');
            if (hit) dropped++;
            return !hit;
          });
        cb(null, kept.join("\n"));
      },
    });
    child.stdout!.pipe(lossy);
    const s = seatFor(await ready(new StreamPiLink(lossy, child.stdin!)));
    const fast = new PiAdapter({ clock: frozenClock, links, requestTimeoutMs: 3000 });
    const m = msg(`lost answer ${randomUUID()}`);
    dropId = `clankie-${m.deliveryId}`;
    const v = await deliverTo(fast, s, m);
    expect(v.result).toBe(AgentResult.Unconfirmed);
    expect(v.reason).toBe("response_lost");
    expect(dropped).toBe(1);
    await mock.waitForRequest(m.text);
    const next = msg(`after the loss ${randomUUID()}`);
    await deliverTo(fast, s, next);
    await mock.waitForRequest(next.text);
    expect(mock.userMessagesContaining(m.text)).toBe(1);
  });

  it("a Pi that dies is typed offline: nothing is sent, nothing crashes", async () => {
    const link = startPiRpc({ bin: bin!, args, cwd: join(dir, "work"), env });
    const s = seatFor(await ready(link));
    expect((await adapter.inspect(s)).snapshot.status).toBe("idle");
    process.kill(link.pid, "SIGKILL");
    for (let i = 0; i < 100 && link.isOpen; i++) await new Promise((r) => setTimeout(r, 50));
    const m = msg(`to the dead ${randomUUID()}`);
    const v = await deliverTo(adapter, s, m);
    expect(v.result).toBe(AgentResult.NotSent);
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });
});
