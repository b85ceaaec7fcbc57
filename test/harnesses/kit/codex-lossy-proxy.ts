/**
 * A WebSocket relay in front of a real Codex app-server socket that loses answers on
 * purpose: once a request with method `dropAfter` has been forwarded to the server (so the
 * write really happens), the client's connection is cut before the answer can come back,
 * or the answer is replaced by a garbled frame. It counts how often each method passed, so
 * a test can prove the adapter never sent a second write.
 */
import { createServer, type Server } from "node:http";
import WebSocket, { WebSocketServer } from "ws";

export interface LossyProxy {
  readonly socketPath: string;
  /** How many requests of each method went through to the server. */
  readonly forwarded: Map<string, number>;
  close(): Promise<void>;
}

export async function startLossyProxy(
  upstreamSocket: string,
  socketPath: string,
  o: { dropAfter: string; how: "cut" | "garble" },
): Promise<LossyProxy> {
  const forwarded = new Map<string, number>();
  const http: Server = createServer();
  const wss = new WebSocketServer({ server: http });
  wss.on("connection", (client) => {
    const upstream = new WebSocket(`ws+unix://${upstreamSocket}:/`);
    const early: WebSocket.RawData[] = [];
    let tripped = false;
    let trippedId: unknown;
    upstream.on("open", () => {
      for (const m of early.splice(0)) upstream.send(m.toString());
    });
    client.on("message", (data) => {
      let method: string | undefined;
      let id: unknown;
      try {
        const m = JSON.parse(data.toString()) as { method?: string; id?: unknown };
        method = m.method;
        id = m.id;
      } catch {
        // pass through as is
      }
      if (method) forwarded.set(method, (forwarded.get(method) ?? 0) + 1);
      const trip = method === o.dropAfter && !tripped;
      if (trip) {
        tripped = true;
        trippedId = id;
      }
      // Cut only once the request has been handed to the server's socket: the write happens.
      const sent = () => {
        if (trip && o.how === "cut") client.terminate();
      };
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data.toString(), sent);
      else {
        early.push(data);
        upstream.once("open", sent);
      }
    });
    upstream.on("message", (data) => {
      if (client.readyState !== WebSocket.OPEN) return;
      if (o.how === "garble" && tripped && trippedId !== undefined) {
        try {
          if ((JSON.parse(data.toString()) as { id?: unknown }).id === trippedId) {
            client.send('{"id":' + String(trippedId) + ',"result":{"tur'); // truncated frame
            return;
          }
        } catch {
          // not JSON: forward
        }
      }
      client.send(data.toString());
    });
    // Leave the server side open a moment so nothing in flight to it is cut with the client.
    client.on("close", () => setTimeout(() => upstream.close(), 2000).unref());
    upstream.on("close", () => client.terminate());
    upstream.on("error", () => client.terminate());
  });
  await new Promise<void>((resolve) => http.listen(socketPath, resolve));
  return {
    socketPath,
    forwarded,
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
