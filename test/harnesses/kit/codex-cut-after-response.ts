/**
 * A WebSocket relay in front of a real Codex app-server socket that loses what comes back
 * after a client's response to a server request: the response is forwarded (so the answer
 * really reaches Codex), then the client's connection is cut before the resolution or
 * anything else can reach it. It counts the responses forwarded, so a test can prove no
 * second answer ever left.
 */
import { createServer, type Server } from "node:http";
import WebSocket, { WebSocketServer } from "ws";

export interface CutAfterResponse {
  readonly socketPath: string;
  readonly responsesForwarded: () => number;
  close(): Promise<void>;
}

export async function startCutAfterResponse(upstreamSocket: string, socketPath: string): Promise<CutAfterResponse> {
  let responses = 0;
  const http: Server = createServer();
  const wss = new WebSocketServer({ server: http });
  wss.on("connection", (client) => {
    const upstream = new WebSocket(`ws+unix://${upstreamSocket}:/`);
    const early: string[] = [];
    let cut = false;
    upstream.on("open", () => {
      for (const m of early.splice(0)) upstream.send(m);
    });
    client.on("message", (data) => {
      const text = data.toString();
      let isResponse = false;
      try {
        const m = JSON.parse(text) as { method?: unknown; result?: unknown };
        isResponse = m.method === undefined && m.result !== undefined;
      } catch {
        // forwarded as is
      }
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else early.push(text);
      if (isResponse) {
        responses++;
        cut = true;
        client.terminate();
      }
    });
    upstream.on("message", (data) => {
      if (!cut) client.send(data.toString());
    });
    client.on("close", () => setTimeout(() => upstream.close(), 500));
    upstream.on("close", () => client.terminate());
  });
  await new Promise<void>((resolve) => http.listen(socketPath, resolve));
  return {
    socketPath,
    responsesForwarded: () => responses,
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
