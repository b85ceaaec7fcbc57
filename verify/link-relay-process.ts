/**
 * The link relay's own process (link-relay.ts starts it): the relay forwards every byte of the agents'
 * links, so it must not share an event loop with the run that drives the leads, reads the journal and
 * collects the report. There, a garbage collection of the run's heap (up to 34 ms measured) held every
 * delivery in flight through the relay, and so every caller queued behind it on the seat: noise in the
 * turn fairness figures that was the bench's, not the product's. Commands come over the IPC channel.
 */
import { connect, createServer, type Socket } from "node:net";

export type RelayCommand = { id: number; op: "down" | "up" | "stats" | "close" };
export type RelayStats = { relayed: number; refused: number; cut: number };
export type RelayAnswer = { id: number; stats: RelayStats } | { ready: true } | { failed: string };

const [listenHost, portText, targetHost] = process.argv.slice(2);
const port = Number(portText);
const send = (a: RelayAnswer) => process.send?.(a);

let isDown = false;
const stats: RelayStats = { relayed: 0, refused: 0, cut: 0 };
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

const cutAll = () => {
  for (const s of live) s.destroy();
  live.clear();
};

process.on("message", (c: RelayCommand) => {
  if (c.op === "down") {
    isDown = true;
    stats.cut += Math.ceil(live.size / 2);
    cutAll();
  } else if (c.op === "up") isDown = false;
  else if (c.op === "close") {
    cutAll();
    server.close(() => {
      send({ id: c.id, stats });
      process.exit(0);
    });
    return;
  }
  send({ id: c.id, stats });
});
// The run that started it is gone: so is its relay.
process.on("disconnect", () => process.exit(0));

server.once("error", (e) => {
  send({ failed: e.message });
  process.exit(1);
});
server.listen(port, listenHost, () => send({ ready: true }));
