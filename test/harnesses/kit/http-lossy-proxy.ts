/**
 * An HTTP relay in front of a real loopback server (OpenCode's) that loses the answer to one
 * request on purpose (rule 39's lost-answer case): an armed request is forwarded whole, the real
 * server acts on it and answers, and the relay then cuts the client's connection instead of
 * passing the answer on, as a link cut after the write would. Everything else passes through.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface HttpLossyProxy {
  readonly url: string;
  /** Lose the answer of the next request whose method and path match. */
  arm(method: string, path: RegExp): void;
  /** What the upstream answered to each request whose answer was lost. */
  readonly lost: { path: string; status: number; body: string }[];
  close(): Promise<void>;
}

export async function startHttpLossyProxy(upstream: string): Promise<HttpLossyProxy> {
  const armed: { method: string; path: RegExp }[] = [];
  const lost: HttpLossyProxy["lost"] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const at = armed.findIndex((a) => a.method === req.method && a.path.test(req.url ?? ""));
    const trap = at >= 0 ? armed.splice(at, 1)[0] : undefined;
    const up = request(
      new URL(req.url ?? "/", upstream),
      { method: req.method, headers: req.headers, agent: false },
      (ur) => {
        const chunks: Buffer[] = [];
        ur.on("data", (c: Buffer) => chunks.push(c));
        ur.on("end", () => {
          const body = Buffer.concat(chunks);
          if (trap) {
            lost.push({ path: req.url ?? "", status: ur.statusCode ?? 0, body: body.toString("utf8") });
            req.socket.destroy();
            return;
          }
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          res.end(body);
        });
      },
    );
    up.on("error", () => req.socket.destroy());
    req.pipe(up);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arm: (method, path) => void armed.push({ method, path }),
    lost,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
