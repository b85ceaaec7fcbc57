/**
 * The node agent's side of a Claude channel socket: prove the token, ask for status, push one
 * event and wait for the exact authenticated ack of its id. Says how far a push got: never
 * written (not sent), acked (transport delivery), or lost after writing (unconfirmed).
 */
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { JsonlSplitter } from "../pi/link.js";
import { ackMacMatches, type ChannelAddress } from "./channel-wire.js";

export type { ChannelAddress };

export type ChannelHello = { ok: true; claudePid: number; mcpReady: boolean } | { ok: false; detail: string };

export type PushOutcome =
  | { kind: "acked"; replayed: boolean }
  | { kind: "not_sent"; detail: string }
  | { kind: "lost"; detail: string };

/** One authenticated session on the channel socket; one request at a time. */
async function session<T>(
  address: ChannelAddress,
  timeoutMs: number,
  body: (
    send: (o: unknown) => void,
    next: () => Promise<Record<string, unknown> | undefined>,
    token: string,
    hello: Record<string, unknown>,
  ) => Promise<T>,
  onNoConnect: (detail: string) => T,
): Promise<T> {
  let token: string;
  try {
    token = readFileSync(address.tokenFile, "utf8").trim();
  } catch (e) {
    return onNoConnect(`channel token unreadable: ${(e as Error).message}`);
  }
  const socket: Socket = connect(address.socketPath);
  const queue: Record<string, unknown>[] = [];
  const waiting: ((m: Record<string, unknown> | undefined) => void)[] = [];
  let closed = false;
  const splitter = new JsonlSplitter((line) => {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const w = waiting.shift();
    if (w) w(m);
    else queue.push(m);
  });
  const shut = () => {
    closed = true;
    for (const w of waiting.splice(0)) w(undefined);
  };
  socket.setEncoding("utf8");
  socket.on("data", (c: string) => splitter.push(c));
  socket.on("close", shut);
  socket.on("error", shut);
  const next = () =>
    new Promise<Record<string, unknown> | undefined>((resolve) => {
      if (queue.length) return resolve(queue.shift());
      if (closed) return resolve(undefined);
      const t = setTimeout(() => resolve(undefined), timeoutMs);
      waiting.push((m) => {
        clearTimeout(t);
        resolve(m);
      });
    });
  const connected = await new Promise<string | undefined>((resolve) => {
    socket.once("connect", () => resolve(undefined));
    socket.once("error", (e) => resolve(e.message));
  });
  if (connected !== undefined) return onNoConnect(`channel socket unreachable: ${connected}`);
  const send = (o: unknown) => socket.write(JSON.stringify(o) + "\n");
  try {
    send({ op: "hello", token });
    const hello = await next();
    if (hello?.op !== "hello" || hello.ok !== true)
      return onNoConnect("the channel refused our token or did not answer");
    return await body(send, next, token, hello);
  } finally {
    socket.destroy();
  }
}

export function channelHello(address: ChannelAddress, timeoutMs: number): Promise<ChannelHello> {
  return session<ChannelHello>(
    address,
    timeoutMs,
    async (_send, _next, _token, hello) => ({
      ok: true,
      claudePid: Number(hello.claudePid),
      mcpReady: hello.mcpReady === true,
    }),
    (detail) => ({ ok: false, detail }),
  );
}

export function pushChannelEvent(
  address: ChannelAddress,
  timeoutMs: number,
  eventId: string,
  content: string,
  meta: Record<string, string>,
): Promise<PushOutcome> {
  return session<PushOutcome>(
    address,
    timeoutMs,
    async (send, next, token) => {
      send({ op: "push", eventId, content, meta });
      const r = await next();
      if (!r) return { kind: "lost", detail: "the channel went away before acknowledging the event" };
      if (r.op === "nack" && r.mayHaveSent !== true)
        return { kind: "not_sent", detail: `the channel refused the event: ${String(r.reason)}` };
      if (r.op !== "ack" || r.eventId !== eventId || r.acknowledged !== true)
        return { kind: "lost", detail: `no exact ack of ${eventId} (got ${String(r.op)} for ${String(r.eventId)})` };
      if (!ackMacMatches(token, eventId, r.mac))
        return { kind: "lost", detail: "the ack's authentication did not match our event id" };
      return { kind: "acked", replayed: r.replayed === true };
    },
    (detail) => ({ kind: "not_sent", detail }),
  );
}
