/**
 * Issue 35 item 1 (rule 52's readiness bound), the Codex half of a hire's brief watch: on a real
 * `codex app-server`, the agent's own connection follows the turn a write started (subscribed after
 * the write, as a hire does it). A model server that refuses every connection is heard as Codex's
 * own `error` event (`model_unreachable`); a model that answers is seen answering, which ends the
 * watch at once so a working worker is not held.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodexConnection } from "../../node-agent/harnesses/codex/connection.js";
import { followCodexTurn } from "../../node-agent/harnesses/codex/readiness.js";
import { startMockResponsesServer, type MockResponsesServer } from "../fixtures/mock-responses-server.js";
import { cleanupCodexEnv, makeCodexEnv, startAppServer, type CodexEnv } from "./kit/codex-env.js";
import { requireHarness } from "./kit/harness-bin.js";

const bin = requireHarness("codex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Served {
  cx: CodexEnv;
  server: ChildProcess;
  /** Plays the pane's TUI: it owns the thread and starts the turn. */
  driver: CodexConnection;
  /** The node agent's own connection. */
  agent: CodexConnection;
}

async function serve(baseUrl: string): Promise<Served> {
  const cx = makeCodexEnv(bin!, baseUrl);
  const sock = join(cx.root, "s.sock");
  const server = await startAppServer(bin!, cx, sock);
  const [d, a] = [await CodexConnection.open(sock), await CodexConnection.open(sock)];
  if (!d.ok || !a.ok) throw new Error("no connection to the app-server");
  return { cx, server, driver: d.connection, agent: a.connection };
}

function stop(s: Served | undefined): void {
  if (!s) return;
  s.driver.close();
  s.agent.close();
  if (s.server.pid) process.kill(-s.server.pid, "SIGKILL");
  cleanupCodexEnv(bin!, s.cx);
}

/** A turn started by the driver with `clientId`, then followed by the agent's connection. */
async function startAndFollow(s: Served, text: string) {
  const t = await s.driver.call<{ thread: { id: string } }>("thread/start", { cwd: s.cx.workDir });
  if (!t.ok) throw new Error(t.message);
  const clientId = randomUUID();
  const input = [{ type: "text", text, text_elements: [] }];
  const turn = await s.driver.call("turn/start", {
    threadId: t.result.thread.id,
    input,
    clientUserMessageId: clientId,
  });
  if (!turn.ok) throw new Error(turn.message);
  const follower = await followCodexTurn(s.agent, t.result.thread.id);
  if (!follower) throw new Error("the agent's connection could not follow the thread");
  return follower;
}

describe.runIf(bin)("a hire's brief turn, followed on a real codex app-server", () => {
  let mock: MockResponsesServer;
  let reachable: Served | undefined;
  let unreachable: Served | undefined;
  beforeAll(async () => {
    mock = await startMockResponsesServer();
    reachable = await serve(mock.baseUrl);
    // Port 9 (discard) has no listener here: every request Codex makes is refused.
    unreachable = await serve("http://127.0.0.1:9/v1");
  });
  afterAll(async () => {
    stop(reachable);
    stop(unreachable);
    await mock?.close();
  });

  it("a model server that refuses connections: Codex's own error event says model_unreachable", async () => {
    const follower = await startAndFollow(unreachable!, "unreachable brief");
    let refused = follower.refused();
    for (let i = 0; !refused && i < 120; i++) {
      await sleep(250);
      refused = follower.refused();
    }
    expect(refused).toMatchObject({ reason: "model_unreachable" });
    expect(refused!.detail).toMatch(/^Codex's error event for turn .+: "Reconnecting\.\.\. waiting for network"/);
    expect(follower.answered()).toBe(false);
    follower.close();
  });

  it("a model that answers: the turn is seen answered, and nothing is refused", async () => {
    const follower = await startAndFollow(reachable!, "reachable brief");
    let answered = false;
    for (let i = 0; !answered && i < 120; i++) {
      answered = follower.answered();
      if (!answered) await sleep(250);
    }
    expect(answered).toBe(true);
    expect(follower.refused()).toBeUndefined();
    follower.close();
  });
});
