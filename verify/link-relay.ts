/**
 * The partition point of the verification run: the agent link's only path. The controller
 * advertises its agent port as 127.0.0.2:<port> (`--agent-advertise 127.0.0.2`), where this
 * relay listens and forwards to the real listener on 127.0.0.1:<port>. Both the agent's gateway
 * calls and its reverse link (which carries every controller-to-agent call) dial the advertised
 * URL, so `down()` cuts the whole link both ways: open connections are destroyed and new ones
 * refused until `up()`. It counts what it carried so the report can show the link went through it.
 */
import { connect, createServer, type Socket } from "node:net";

export interface LinkRelay {
  readonly host: string;
  readonly port: number;
  down(): void;
  up(): void;
  /** Connections relayed, and connections refused or cut by a partition. */
  stats(): { relayed: number; refused: number; cut: number };
  close(): Promise<void>;
}

export async function startLinkRelay(listenHost: string, port: number, targetHost: string): Promise<LinkRelay> {
  let isDown = false;
  const stats = { relayed: 0, refused: 0, cut: 0 };
  const live = new Set<Socket>();
  const server = createServer((client) => {
    if (isDown) {
      stats.refused++;
      return client.destroy();
    }
    stats.relayed++;
    const upstream = connect(port, targetHost);
    live.add(client).add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.pipe(upstream);
    upstream.pipe(client);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      a.on("close", () => {
        live.delete(a);
        b.destroy();
      });
      a.on("error", () => b.destroy());
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, listenHost, () => resolve());
  });
  return {
    host: listenHost,
    port,
    down() {
      isDown = true;
      stats.cut += Math.ceil(live.size / 2);
      for (const s of live) s.destroy();
      live.clear();
    },
    up() {
      isDown = false;
    },
    stats: () => ({ ...stats }),
    async close() {
      for (const s of live) s.destroy();
      live.clear();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
