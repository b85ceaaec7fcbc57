/**
 * CodexConnection against a scripted WebSocket server on a unix socket: the framing Codex's
 * app-server uses (JSON-RPC 2.0 without the jsonrpc field), and bad input — garbage and
 * truncated frames, a socket that vanishes mid-call, a server that is not there — each a
 * typed outcome, never a throw.
 */
import { afterEach, describe, expect, it } from "vitest";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CodexConnection, wsUrlFor } from "../../../../../node-agent/harnesses/codex/connection.js";
import { startFakeAppServer, type FakeAppServer } from "../../../../kit/fake-codex-app-server.js";

describe("CodexConnection", () => {
  let server: FakeAppServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("maps endpoints to ws URLs: a socket path or unix:// becomes ws+unix, ws:// stays", () => {
    expect(wsUrlFor("/a/b.sock")).toBe("ws+unix:///a/b.sock:/");
    expect(wsUrlFor("unix:///a/b.sock")).toBe("ws+unix:///a/b.sock:/");
    expect(wsUrlFor("ws://127.0.0.1:4000")).toBe("ws://127.0.0.1:4000");
  });

  it("initializes opting into the experimental API, sends no jsonrpc field, and types server errors", async () => {
    server = await startFakeAppServer((m, ws) =>
      ws.send(JSON.stringify({ id: m.id, error: { code: -32600, message: "no active turn to steer" } })),
    );
    const o = await CodexConnection.open(server.sock);
    expect(o.ok && o.codexHome).toBe("/home/x/.codex");
    const init = server.received[0] as { method: string; params: { capabilities: unknown }; jsonrpc?: unknown };
    expect(init.method).toBe("initialize");
    expect(init.params.capabilities).toEqual({ experimentalApi: true });
    expect("jsonrpc" in init).toBe(false);
    const r = await (o.ok ? o.connection : undefined)!.call("turn/steer", {});
    expect(r).toEqual({ ok: false, kind: "error", code: -32600, message: "no active turn to steer" });
    expect(server.received.map((m) => m.method)).toEqual(["initialize", "initialized", "turn/steer"]);
  });

  it("a garbage frame ends every pending call as garbled and closes the connection; later calls are closed, not sent", async () => {
    server = await startFakeAppServer((_m, ws) => ws.send("<<<not json"));
    const o = await CodexConnection.open(server.sock);
    if (!o.ok) throw new Error(o.message);
    const [a, b] = await Promise.all([
      o.connection.call("thread/read", {}),
      o.connection.call("thread/loaded/list", {}),
    ]);
    expect(a).toMatchObject({ ok: false, kind: "garbled" });
    expect(b).toMatchObject({ ok: false, kind: "garbled" });
    const before = server.received.length;
    expect(await o.connection.call("turn/steer", {})).toMatchObject({ ok: false, kind: "closed" });
    expect(server.received.length).toBe(before);
  });

  it("a truncated frame is garbled, never read as an answer", async () => {
    server = await startFakeAppServer((m, ws) => ws.send(`{"id":${m.id},"result":{"turnId":"t`));
    const o = await CodexConnection.open(server.sock);
    if (!o.ok) throw new Error(o.message);
    expect(await o.connection.call("turn/steer", {})).toMatchObject({ ok: false, kind: "garbled" });
  });

  it("a frame of the wrong JSON shape (array, reply without id) is garbled too", async () => {
    server = await startFakeAppServer((m, ws) => ws.send(m.method === "a" ? "[1,2]" : JSON.stringify({ result: {} })));
    for (const method of ["a", "b"]) {
      const o = await CodexConnection.open(server.sock);
      if (!o.ok) throw new Error(o.message);
      expect(await o.connection.call(method, {})).toMatchObject({ ok: false, kind: "garbled" });
    }
  });

  it("a socket that vanishes mid-call ends the call as closed", async () => {
    server = await startFakeAppServer((_m, ws) => ws.terminate());
    const o = await CodexConnection.open(server.sock);
    if (!o.ok) throw new Error(o.message);
    expect(await o.connection.call("thread/queue/add", {})).toMatchObject({ ok: false, kind: "closed" });
    expect(o.connection.isOpen).toBe(false);
  });

  it("an answer that never comes is a timeout", async () => {
    server = await startFakeAppServer(() => {});
    const o = await CodexConnection.open(server.sock);
    if (!o.ok) throw new Error(o.message);
    expect(await o.connection.call("turn/steer", {}, 50)).toMatchObject({ ok: false, kind: "timeout" });
  });

  it("notifications reach listeners, and a server request (an approval) is never answered", async () => {
    server = await startFakeAppServer((m, ws) => {
      ws.send(JSON.stringify({ id: 99, method: "item/commandExecution/requestApproval", params: {} }));
      ws.send(JSON.stringify({ method: "thread/status/changed", params: { threadId: "t1" } }));
      ws.send(JSON.stringify({ id: m.id, result: {} }));
    });
    const o = await CodexConnection.open(server.sock);
    if (!o.ok) throw new Error(o.message);
    const seen: string[] = [];
    o.connection.onNotification((n) => seen.push(n.method));
    expect(await o.connection.call("thread/read", {})).toEqual({ ok: true, result: {} });
    expect(seen).toEqual(["thread/status/changed"]);
    await new Promise((r) => setTimeout(r, 20));
    expect(server.received.filter((m) => m.id === 99)).toEqual([]);
  });

  it("a server that is not there is unreachable, not an exception", async () => {
    const o = await CodexConnection.open(join(tmpdir(), "no-such-codex.sock"));
    expect(o).toMatchObject({ ok: false, kind: "unreachable" });
  });
});
