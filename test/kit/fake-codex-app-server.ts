/**
 * A scripted stand-in for a Codex app-server on a unix socket (WebSocket, JSON-RPC without
 * the jsonrpc field): it answers `initialize` like the real one and hands every other
 * message to the test's script, which may answer, stay silent, garble or hang up. For
 * bad-input tests the real binary cannot be made to produce.
 */
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocketServer, type WebSocket } from "ws";

export type AppServerScript = (
  msg: { id?: number; method?: string; params?: Record<string, unknown> },
  ws: WebSocket,
) => void;

export interface FakeAppServer {
  /** The unix socket path (transport "unix"), "" over TCP. */
  sock: string;
  /** Where a client connects: the socket path, or `ws://127.0.0.1:PORT` over TCP. */
  url: string;
  /** The loopback TCP port (transport "tcp"), 0 over a unix socket. */
  port: number;
  received: { method?: string; id?: number; params?: Record<string, unknown> }[];
  /** Hangs up on every client and stops listening (a vanished socket). */
  close(): Promise<void>;
}

export async function startFakeAppServer(
  script: AppServerScript,
  codexHome = "/home/x/.codex",
  transport: "unix" | "tcp" = "unix",
): Promise<FakeAppServer> {
  const dir = mkdtempSync(join(tmpdir(), "cx-fake-"));
  const sock = join(dir, "s.sock");
  const received: FakeAppServer["received"] = [];
  const http: Server = createServer();
  const wss = new WebSocketServer({ server: http });
  wss.on("connection", (ws) => {
    ws.on("message", (data) => {
      const msg = JSON.parse(data.toString()) as { id?: number; method?: string; params?: Record<string, unknown> };
      received.push(msg);
      if (msg.method === "initialize")
        ws.send(JSON.stringify({ id: msg.id, result: { userAgent: "fake/0", codexHome } }));
      else if (msg.method !== "initialized") script(msg, ws);
    });
  });
  // Over TCP it stands in for a dedicated `codex app-server --listen ws://127.0.0.1:0` (Windows, rule 38).
  if (transport === "tcp") await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  else await new Promise<void>((r) => http.listen(sock, r));
  const port = transport === "tcp" ? (http.address() as { port: number }).port : 0;
  return {
    sock: transport === "tcp" ? "" : sock,
    url: transport === "tcp" ? `ws://127.0.0.1:${port}` : sock,
    port,
    received,
    async close() {
      for (const c of wss.clients) c.terminate();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
