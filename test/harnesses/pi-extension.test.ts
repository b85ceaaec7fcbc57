/**
 * The Clankie Pi extension inside the real Pi TUI (pinned version) in a private tmux server,
 * reached by the Pi adapter over the extension's socket: the same commands as RPC mode, for
 * a Pi the agent did not launch. Driven by the mock Anthropic server.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { PiAdapter } from "../../node-agent/harnesses/pi/adapter.js";
import { PiLinkBook } from "../../node-agent/harnesses/pi/links.js";
import { dialPiExtension } from "../../node-agent/harnesses/pi/extension-link.js";
import type { NativeWrite, SeatOf, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";

const bin = requireHarness("pi");
const EXTENSION = fileURLToPath(new URL("../../dist/worker/pi-extension.js", import.meta.url));

describe.runIf(bin)("PiAdapter through the Clankie extension in the real Pi TUI", () => {
  let mock: MockAnthropicServer;
  let dir: string;
  let seat: SeatOf<"pi">;
  let piPid = -1;
  const tmuxSocket = `clankie-pi-${process.pid}-${Date.now()}`;
  const links = new PiLinkBook((c) => dialPiExtension(c));
  const adapter = new PiAdapter({ clock: frozenClock, links, startWaitMs: 30_000 });
  const msg = (text: string, mode: NativeWrite["mode"] = "auto"): NativeWrite => ({
    deliveryId: randomUUID(),
    text,
    mode,
    conversationId: "c1",
  });

  beforeAll(async () => {
    if (!existsSync(EXTENSION))
      throw new Error(`${EXTENSION} is missing: run npm run build (npm run test:harnesses does)`);
    mock = await startMockAnthropicServer();
    dir = mkdtempSync(join(tmpdir(), "clankie-pitui-"));
    const agentDir = join(dir, "home/.pi/agent");
    const socketDir = join(dir, "sockets");
    mkdirSync(agentDir, { recursive: true });
    mkdirSync(join(dir, "work"));
    writeFileSync(
      join(agentDir, "models.json"),
      JSON.stringify({
        providers: {
          mock: { baseUrl: mock.url, api: "anthropic-messages", apiKey: "sk-mock", models: [{ id: "mock-model" }] },
        },
      }),
    );
    const env = {
      HOME: join(dir, "home"),
      PI_CODING_AGENT_DIR: agentDir,
      CLANKIE_PI_SOCKET_DIR: socketDir,
      XDG_CONFIG_HOME: join(dir, "config"),
      XDG_CACHE_HOME: join(dir, "cache"),
      PATH: process.env.PATH ?? "",
      TERM: "xterm-256color",
    };
    // Fixed paths and flags only; tmux hands this line to a shell.
    const command = [bin!, "-e", EXTENSION, "--no-session", "--provider", "mock", "--model", "mock-model"]
      .map((a) => `'${a}'`)
      .join(" ");
    execFileSync("tmux", [
      "-L",
      tmuxSocket,
      "new-session",
      "-d",
      "-s",
      "pi",
      "-x",
      "160",
      "-y",
      "40",
      "-c",
      join(dir, "work"),
      ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
      command,
    ]);
    for (let i = 0; i < 600 && piPid < 0; i++) {
      const sock = existsSync(socketDir) ? readdirSync(socketDir).find((f) => /^pi-\d+\.sock$/.test(f)) : undefined;
      if (sock && existsSync(join(socketDir, sock.replace(".sock", ".token")))) piPid = Number(/\d+/.exec(sock)![0]);
      else await new Promise((r) => setTimeout(r, 200));
    }
    if (piPid < 0)
      throw new Error(
        `the Pi TUI never opened the extension socket:\n${execFileSync("tmux", ["-L", tmuxSocket, "capture-pane", "-p", "-t", "pi"], { encoding: "utf8" })}`,
      );
    seat = {
      name: "pi-tui",
      kind: SeatKind.Pi,
      title: "pi",
      occupantId: `pi:${piPid}`,
      createdAtMs: Date.now(),
      control: {
        transport: "extension",
        socketPath: join(socketDir, `pi-${piPid}.sock`),
        tokenFile: join(socketDir, `pi-${piPid}.token`),
        piPid,
      },
    };
  });
  afterAll(async () => {
    mock?.release();
    await links.close();
    try {
      if (piPid > 0) process.kill(piPid, "SIGTERM");
    } catch {
      // already gone
    }
    try {
      execFileSync("tmux", ["-L", tmuxSocket, "kill-server"]);
    } catch {
      // already gone
    }
    await mock?.close();
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  it("rule 42: an idle Pi TUI advertises exactly what the extension's hello offers: queue (followUp) and abort, no steer", async () => {
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const link = await links.get(seat);
    expect(link?.origin).toEqual({
      kind: "extension",
      pid: piPid,
      commands: ["get_state", "prompt", "abort"],
      deliverAs: ["steer", "followUp"],
    });
    expect((await adapter.inspect(seat)).snapshot.inputCapabilities).toEqual({
      deliveryModes: ["queue"],
      interrupt: true,
      nextTurnOnly: false,
    });
  });

  it("rule 3: a seat whose recorded Pi is not the process serving the socket is refused, and nothing is sent", async () => {
    const other: SeatRecord = {
      ...seat,
      name: "pi-someone-else",
      occupantId: `pi:${piPid + 100_000}`,
      control: { ...seat.control!, piPid: piPid + 100_000 },
    };
    const { snapshot, proofs } = await adapter.inspect(other);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: [], interrupt: false, nextTurnOnly: false });
    expect(proofs[0]).toMatchObject({ outcome: "refuted", detail: expect.stringContaining(`served by Pi ${piPid}`) });
    const m = msg(`not for a borrowed socket ${randomUUID()}`);
    expect((await deliverTo(adapter, other, m)).result).toBe(AgentResult.NotSent);
    expect(mock.userMessagesContaining(m.text)).toBe(0);
  });

  it("an idle Pi TUI takes a message through the extension as a new turn, once; Pi's own input event says it started one", async () => {
    const m = msg(`tui hello ${randomUUID()}`);
    const v = await deliverTo(adapter, seat, m);
    expect(v.result).toBe(AgentResult.Delivered);
    // Verdict source changed with Pi 1.x (pinned 1.6.0): its input event (source "extension") tells
    // the extension how Pi took the message; on 0.73 there was none and Pi's state at the send decided.
    expect(v.detail).toContain("Pi's own input event");
    await mock.waitForRequest(m.text);
    expect(mock.userMessagesContaining(m.text)).toBe(1);
  });

  it("a streaming Pi TUI is steered through the extension, and explicit steer to it idle is refused pre-send", async () => {
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const idleSteer = msg(`idle steer ${randomUUID()}`, "steer");
    expect((await deliverTo(adapter, seat, idleSteer)).result).toBe(AgentResult.Rejected);
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(adapter, seat, hold)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(hold.text);
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "working"; i++)
      await new Promise((r) => setTimeout(r, 100));
    // Rule 42: while a turn runs, the hello's steer route is advertised too.
    expect((await adapter.inspect(seat)).snapshot.inputCapabilities.deliveryModes).toEqual(["steer", "queue"]);
    const steer = msg(`tui steer ${randomUUID()}`, "steer");
    expect((await deliverTo(adapter, seat, steer)).result).toBe(AgentResult.Steered);
    mock.release();
    await mock.waitForRequest(steer.text);
    expect(mock.userMessagesContaining(steer.text)).toBe(1);
    expect(mock.userMessagesContaining(idleSteer.text)).toBe(0);
  });

  it("issue 35 item 2: the prompt's answer carries Pi's disposition at the send; a Pi busy since the last inspect queues the message at once", async () => {
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const hold = msg(`hold ${randomUUID()}`);
    expect((await deliverTo(adapter, seat, hold)).result).toBe(AgentResult.Delivered);
    await mock.waitForRequest(hold.text);
    // No inspect since: the adapter's last state says idle while Pi streams the held turn.
    const queued = msg(`queued while busy ${randomUUID()}`);
    const started = Date.now();
    const v = await adapter.write(seat, queued);
    // Without the disposition the adapter waited 30 s for a start that cannot come, then said "not yet seen starting".
    expect(v).toMatchObject({ result: AgentResult.Queued, detail: expect.stringContaining("queued_until_turn_end") });
    // Pi 1.x: queued by Pi's own word (its input event named followUp), not only by its state.
    expect(v.detail).toContain("Pi's own input event");
    expect(Date.now() - started).toBeLessThan(10_000);
    mock.release();
    await mock.waitForRequest(queued.text);
    expect(mock.userMessagesContaining(queued.text)).toBe(1);
  });

  it("stop aborts the TUI's running turn through the extension", async () => {
    for (let i = 0; i < 150 && (await adapter.inspect(seat)).snapshot.status !== "idle"; i++)
      await new Promise((r) => setTimeout(r, 200));
    const hold = msg(`hold ${randomUUID()}`);
    await deliverTo(adapter, seat, hold);
    await mock.waitForRequest(hold.text);
    expect((await adapter.stop(seat)).result).toBe("stopped");
  });
});
