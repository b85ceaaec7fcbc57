/**
 * A TCP proxy that delays every chunk by a fixed one-way latency in each direction, so a
 * 25 ms delay gives a 50 ms round trip. Stands in for netem, which this kernel lacks
 * ("Specified qdisc kind is unknown") and which would need root on a shared loopback.
 * Order is kept: equal-delay timers fire in the order they were set.
 */
import { createServer, connect, type Server, type Socket, type AddressInfo } from "node:net";

export interface DelayProxy {
  readonly port: number;
  readonly url: string;
  /** Connections accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

function relay(from: Socket, to: Socket, oneWayMs: number): void {
  from.on("data", (chunk: Buffer) => {
    if (oneWayMs <= 0) return void to.write(chunk);
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, oneWayMs);
  });
  // The end must not overtake data still waiting in timers.
  from.on("end", () => setTimeout(() => to.end(), oneWayMs));
  from.on("error", () => to.destroy());
  from.on("close", () => setTimeout(() => to.destroy(), oneWayMs + 5));
}

/** Listens on 127.0.0.1 (a free port) and forwards to targetHost:targetPort with the delay. */
export async function startDelayProxy(targetHost: string, targetPort: number, oneWayMs: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect({ host: targetHost, port: targetPort });
    // No Nagle on either leg: the proxy must add only the delay it was asked for.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
    }
    relay(client, upstream, oneWayMs);
    relay(upstream, client, oneWayMs);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
