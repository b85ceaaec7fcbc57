/**
 * The Clankie Pi extension, loaded by a Pi TUI in a pane (`pi -e <dist>/worker/pi-extension.js`
 * or Pi's extensions folder). It serves the node agent the same commands as Pi's RPC mode
 * (get_state, prompt with streamingBehavior steer|followUp, abort) on a unix socket in
 * $CLANKIE_PI_SOCKET_DIR, named by this Pi's pid, behind a 0600 token; it forwards message_start
 * events so the agent sees its message begin, and `clankie_entry` once Pi has appended the
 * session entry for a delivered message (its exact entry id and the session file, rule 42).
 * get_state also says whether Pi could take a turn: its model, and whether Pi has a key for it.
 * Messages go in through Pi's own API (sendUserMessage), never as keystrokes.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { JsonlSplitter } from "../node-agent/harnesses/pi/link.js";
import { PI_DELIVERY_ENTRY, type PiSessionEntryLike } from "../node-agent/harnesses/pi/session-entry.js";
import { PiEntryBinder } from "./pi-entry-binding.js";

/** The slice of Pi's ExtensionAPI this extension uses (Pi 0.73 and 1.x). */
interface PiContext {
  isIdle(): boolean;
  abort(): void;
  hasPendingMessages(): boolean;
  /** The session's model, and the registry Pi itself asks before a turn ("No API key found…"). */
  model?: { provider?: string; id?: string } | undefined;
  modelRegistry?: { hasConfiguredAuth?(model: unknown): boolean } | undefined;
  sessionManager: {
    getSessionFile?(): string | undefined;
    getSessionId?(): string | undefined;
    getEntries?(): PiSessionEntryLike[];
  };
}
interface PiApi {
  on(event: string, handler: (event: Record<string, unknown>, ctx: PiContext) => unknown): void;
  sendUserMessage(text: string, options?: { deliverAs?: "steer" | "followUp" }): void;
  appendEntry?(customType: string, data: unknown): void;
}

/** How long a prompt's answer waits for Pi's input event before answering from Pi's state. */
const INPUT_EVENT_WAIT_MS = 1500;

export function piExtensionPaths(dir: string, pid: number): { socketPath: string; tokenFile: string } {
  return { socketPath: join(dir, `pi-${pid}.sock`), tokenFile: join(dir, `pi-${pid}.token`) };
}

export default function clankiePiExtension(pi: PiApi): void {
  const dir = process.env.CLANKIE_PI_SOCKET_DIR;
  if (!dir) return;
  let ctx: PiContext | undefined;
  let server: Server | undefined;
  const clients = new Set<Socket>();
  const { socketPath, tokenFile } = piExtensionPaths(dir, process.pid);
  const token = randomBytes(32).toString("hex");

  const broadcast = (o: unknown) => {
    for (const c of clients) c.write(JSON.stringify(o) + "\n");
  };
  // Rule 42: the exact entry Pi appended for our message, recorded in the session itself and told to the agent.
  const binder = new PiEntryBinder(({ deliveryId, entryId }) => {
    pi.appendEntry?.(PI_DELIVERY_ENTRY, { deliveryId, entryId });
    broadcast({ type: "clankie_entry", deliveryId, entryId, sessionFile: ctx?.sessionManager.getSessionFile?.() });
  });
  const state = (c: PiContext) => {
    const file = c.sessionManager.getSessionFile?.();
    const model = c.model;
    const check = c.modelRegistry?.hasConfiguredAuth;
    return {
      isStreaming: !c.isIdle(),
      sessionId: c.sessionManager.getSessionId?.() ?? file ?? `pi-${process.pid}`,
      sessionFile: file,
      pendingMessageCount: c.hasPendingMessages() ? 1 : 0,
      // Pi's own readiness, the checks its prompt makes before a turn (issue 35): a model, and a key for it.
      model: model ? `${model.provider ?? "?"}/${model.id ?? "?"}` : null,
      ...(model && check ? { modelAuth: check.call(c.modelRegistry, model) === true } : {}),
    };
  };

  // Messages we handed Pi, waiting for its `input` event (Pi 1.x), by text, oldest first.
  const awaiting: { text: string; resolve: (how: "none" | "steer" | "followUp" | undefined) => void }[] = [];
  const takenBy = (text: string) => {
    let resolve!: (how: "none" | "steer" | "followUp" | undefined) => void;
    const seen = new Promise<"none" | "steer" | "followUp" | undefined>((r) => (resolve = r));
    const waiter = { text, resolve };
    awaiting.push(waiter);
    const drop = () => {
      const i = awaiting.indexOf(waiter);
      if (i >= 0) awaiting.splice(i, 1);
    };
    // Pi 0.73 emits no input event for an extension's message: fall back to the state after a moment.
    const timer = setTimeout(() => {
      drop();
      resolve(undefined);
    }, INPUT_EVENT_WAIT_MS);
    return {
      seen: seen.finally(() => clearTimeout(timer)),
      cancel: () => {
        drop();
        clearTimeout(timer);
      },
    };
  };
  pi.on("input", (event) => {
    if (event.source !== "extension") return undefined;
    const i = awaiting.findIndex((w) => w.text === event.text);
    if (i < 0) return undefined;
    const [w] = awaiting.splice(i, 1);
    const how = event.streamingBehavior;
    w!.resolve(how === "steer" ? "steer" : how === "followUp" ? "followUp" : "none");
    // Never transform or handle the owner's or our input: Pi carries on as if we were not here.
    return undefined;
  });

  const serve = (socket: Socket) => {
    let authed = false;
    const reply = (id: unknown, command: string, body: { success: boolean; data?: unknown; error?: string }) =>
      socket.write(JSON.stringify({ type: "response", id, command, ...body }) + "\n");
    const splitter = new JsonlSplitter((line) => {
      let cmd: {
        type?: string;
        id?: string;
        token?: string;
        message?: string;
        streamingBehavior?: string;
        deliveryId?: string;
      };
      try {
        cmd = JSON.parse(line);
      } catch {
        socket.destroy();
        return;
      }
      if (!authed) {
        const given = Buffer.from(String(cmd.token ?? ""));
        const want = Buffer.from(token);
        if (cmd.type !== "hello" || given.length !== want.length || !timingSafeEqual(given, want)) {
          socket.destroy();
          return;
        }
        authed = true;
        clients.add(socket);
        // Who serves this socket and exactly what it offers: the adapter advertises only this (rules 3, 42).
        reply(cmd.id, "hello", {
          success: true,
          data: { pid: process.pid, commands: ["get_state", "prompt", "abort"], deliverAs: ["steer", "followUp"] },
        });
        return;
      }
      const c = ctx;
      if (!c) return reply(cmd.id, String(cmd.type), { success: false, error: "no session is active" });
      if (cmd.type === "get_state") return reply(cmd.id, "get_state", { success: true, data: state(c) });
      if (cmd.type === "abort") {
        c.abort();
        return reply(cmd.id, "abort", { success: true });
      }
      if (cmd.type === "prompt" && typeof cmd.message === "string") {
        const deliveryId = typeof cmd.deliveryId === "string" && cmd.deliveryId ? cmd.deliveryId : undefined;
        if (deliveryId) binder.expect(deliveryId, cmd.message);
        const steer = cmd.streamingBehavior === "steer";
        // Pi's state at the send, the answer when Pi says nothing more (0.73).
        const fromState = c.isIdle() ? "started" : steer ? "steered" : "queued";
        const taken = takenBy(cmd.message);
        try {
          pi.sendUserMessage(cmd.message, { deliverAs: steer ? "steer" : "followUp" });
        } catch (e) {
          taken.cancel();
          if (deliveryId) binder.forget(deliveryId);
          return reply(cmd.id, "prompt", { success: false, error: (e as Error).message });
        }
        // Pi 1.x dispatches the message asynchronously and tells extensions how it took it: its
        // `input` event (source "extension") says whether it starts a run or joins one as steer
        // or follow-up. That is Pi's own disposition; the state above is only the fallback.
        void taken.seen.then((how) => {
          const disposition =
            how === undefined ? fromState : how === "none" ? "started" : how === "steer" ? "steered" : "queued";
          reply(cmd.id, "prompt", {
            success: true,
            data: { disposition, dispositionFrom: how === undefined ? "state" : "input_event" },
          });
        });
        return;
      }
      return reply(cmd.id, String(cmd.type), { success: false, error: "unsupported command" });
    });
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => splitter.push(d));
    socket.on("close", () => clients.delete(socket));
    socket.on("error", () => socket.destroy());
  };

  pi.on("session_start", async (_event, c) => {
    ctx = c;
    if (server) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    rmSync(socketPath, { force: true });
    server = createServer(serve);
    await new Promise<void>((resolve) => server!.listen(socketPath, () => resolve()));
    chmodSync(socketPath, 0o600);
    writeFileSync(tokenFile, token, { mode: 0o600 });
  });
  pi.on("message_start", (event) => broadcast({ type: "message_start", message: event.message }));
  pi.on("message_end", (event, c) => binder.onMessageEnd(event.message, () => c.sessionManager.getEntries?.() ?? []));
  pi.on("session_shutdown", () => {
    ctx = undefined;
    for (const c of clients) c.destroy();
    server?.close();
    server = undefined;
    rmSync(socketPath, { force: true });
    rmSync(tokenFile, { force: true });
  });
}
