/**
 * Rule 3 against the real `pi --mode rpc` (pinned version), driven by the mock Anthropic
 * server: a headless RPC link, however live, proves no control of an existing interactive
 * session, so the Pi adapter refuses it as a seat: no capabilities, nothing written, no stop.
 * Delivery through a Pi that is a seat (the extension in the pane's TUI) is pi-extension.test.ts.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentResult, SeatKind } from "../../shared/verdicts.js";
import { PiAdapter } from "../../node-agent/harnesses/pi/adapter.js";
import { PiLinkBook } from "../../node-agent/harnesses/pi/links.js";
import { startPiRpc, type PiLink } from "../../node-agent/harnesses/pi/link.js";
import type { NativeWrite, SeatRecord } from "../../node-agent/harnesses/adapter.js";
import { startMockAnthropicServer, type MockAnthropicServer } from "../fixtures/mock-anthropic-server.js";
import { requireHarness } from "./kit/harness-bin.js";
import { deliverTo, frozenClock } from "./kit/deliver-to.js";

const bin = requireHarness("pi");

describe.runIf(bin)("rule 3: a headless pi --mode rpc link is not a seat", () => {
  let mock: MockAnthropicServer;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const links = new PiLinkBook();
  const adapter = new PiAdapter({ clock: frozenClock, links, startWaitMs: 30_000 });
  const args = ["--no-session", "--provider", "mock", "--model", "mock-model"];

  beforeAll(async () => {
    mock = await startMockAnthropicServer();
    dir = mkdtempSync(join(tmpdir(), "clankie-pi-"));
    const agentDir = join(dir, "home/.pi/agent");
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
    env = {
      PATH: process.env.PATH,
      HOME: join(dir, "home"),
      PI_CODING_AGENT_DIR: agentDir,
      XDG_CONFIG_HOME: join(dir, "config"),
      XDG_DATA_HOME: join(dir, "data"),
      XDG_CACHE_HOME: join(dir, "cache"),
    };
  });
  afterAll(async () => {
    mock?.release();
    await links.close();
    await mock?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Pi reads commands only once started; a first get_state with a long timeout waits for that. */
  async function ready(link: PiLink): Promise<PiLink> {
    const r = await link.request({ type: "get_state" }, `ready-${randomUUID()}`, 90_000);
    if (r.kind !== "ok") throw new Error(`pi did not start: ${JSON.stringify(r)}`);
    return link;
  }
  async function launched(): Promise<{ seat: SeatRecord; link: PiLink & { pid: number } }> {
    const link = startPiRpc({ bin: bin!, args, cwd: join(dir, "work"), env });
    await ready(link);
    const name = `pi-${randomUUID().slice(0, 8)}`;
    links.addLaunched(name, link);
    // Even a record naming the RPC child's own pid does not make it an interactive session.
    return {
      link,
      seat: {
        name,
        kind: SeatKind.Pi,
        title: "pi",
        occupantId: `pi:${link.pid}`,
        createdAtMs: Date.now(),
        control: { transport: "extension", socketPath: "", tokenFile: "", piPid: link.pid },
      },
    };
  }
  const msg = (text: string, mode: NativeWrite["mode"] = "auto"): NativeWrite => ({
    deliveryId: randomUUID(),
    text,
    mode,
    conversationId: "c1",
  });

  it("the live RPC link answers, yet the seat advertises nothing and its proof is refuted", async () => {
    const { seat, link } = await launched();
    expect(link.isOpen).toBe(true);
    expect(link.origin).toEqual({ kind: "headless-rpc" });
    const { snapshot, proofs } = await adapter.inspect(seat);
    expect(snapshot.inputCapabilities).toEqual({ deliveryModes: [], interrupt: false, nextTurnOnly: false });
    expect(proofs).toContainEqual(
      expect.objectContaining({
        kind: "pi_control",
        outcome: "refuted",
        detail: expect.stringContaining("headless pi --mode rpc"),
      }),
    );
  });

  it("a message to it is not sent, plain or steered, and nothing reaches the model", async () => {
    const { seat } = await launched();
    for (const mode of ["auto", "steer", "queue"] as const) {
      const m = msg(`never through headless rpc ${mode} ${randomUUID()}`, mode);
      const v = await deliverTo(adapter, seat, m);
      expect(v.result, `${mode}: ${v.detail}`).toBe(AgentResult.NotSent);
      expect(mock.userMessagesContaining(m.text)).toBe(0);
    }
    // And written directly, past the gate, the adapter still refuses it.
    const direct = await adapter.write(seat, msg(`direct ${randomUUID()}`));
    expect(direct).toMatchObject({ result: AgentResult.NotSent, reason: "no_native_control" });
  });

  it("stop is unsupported: no interrupt is offered through a headless link", async () => {
    const { seat } = await launched();
    expect((await adapter.stop(seat)).result).toBe("unsupported");
  });
});
