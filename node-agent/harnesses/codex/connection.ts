/**
 * One WebSocket connection to a Codex app-server (its unix socket via `ws+unix://<sock>:/`,
 * or `ws://host:port`), speaking JSON-RPC 2.0 without the `jsonrpc` field, one message per
 * text frame. Every call ends in a typed outcome, never a throw: a reply, a server error,
 * or a reason the reply will not come (closed, garbled, timeout). Server-initiated requests
 * are never answered here: approvals belong to the pane's owner, and only the question watcher
 * (codex-questions.ts) answers an informational question, through `respond`.
 */
import type { Socket } from "node:net";
import WebSocket from "ws";
import type { TcpTuple } from "../../proofs/provider.js";

export type CallOutcome<T = unknown> =
  | { ok: true; result: T }
  /** The server answered with an error: its message says why (e.g. a wrong expectedTurnId). */
  | { ok: false; kind: "error"; code: number; message: string }
  /** No answer: the socket closed, a garbled frame arrived, or the time ran out. The request may have been acted on. */
  | { ok: false; kind: "closed" | "garbled" | "timeout"; message: string };

export interface CodexNotification {
  method: string;
  params: Record<string, unknown>;
}

/** A request the app-server sent us (it carries an id and waits for our response). */
export interface CodexServerRequest {
  id: number | string;
  method: string;
  params: Record<string, unknown>;
}

export type OpenOutcome =
  | { ok: true; connection: CodexConnection; userAgent: string; codexHome: string }
  | { ok: false; kind: "unreachable" | "handshake_failed"; message: string };

export const DEFAULT_CALL_TIMEOUT_MS = 10_000;

/** The socket path of a unix endpoint (`/path/to.sock`, `unix:///path`, `ws+unix:///path:/`); undefined for ws://. */
export function unixSocketPathOf(endpoint: string): string | undefined {
  if (endpoint.startsWith("ws://") || endpoint.startsWith("wss://")) return undefined;
  if (endpoint.startsWith("ws+unix://")) return endpoint.slice("ws+unix://".length).replace(/:\/.*$/, "");
  return endpoint.startsWith("unix://") ? endpoint.slice("unix://".length) : endpoint;
}

/** `/path/to.sock` or `unix:///path` → `ws+unix:///path:/`; ws:// stays as it is. */
export function wsUrlFor(endpoint: string): string {
  if (endpoint.startsWith("ws://") || endpoint.startsWith("wss://") || endpoint.startsWith("ws+unix://"))
    return endpoint;
  return `ws+unix://${unixSocketPathOf(endpoint)}:/`;
}

export class CodexConnection {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (o: CallOutcome) => void; timer: NodeJS.Timeout }>();
  private readonly listeners = new Set<(n: CodexNotification) => void>();
  private readonly requestListeners = new Set<(r: CodexServerRequest) => void>();
  private closedReason: string | undefined;

  private constructor(
    private readonly ws: WebSocket,
    private readonly socket: Socket | undefined,
  ) {
    ws.on("message", (data, isBinary) => this.onFrame(isBinary ? "" : data.toString()));
    ws.on("close", () => this.fail("closed", "the app-server connection closed"));
    ws.on("error", (e) => this.fail("closed", `the app-server connection failed: ${e.message}`));
  }

  /** Connects and performs `initialize` (opting into the experimental API) + `initialized`. */
  static async open(endpoint: string, o: { timeoutMs?: number; clientName?: string } = {}): Promise<OpenOutcome> {
    const timeoutMs = o.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    let ws: WebSocket;
    try {
      ws = new WebSocket(wsUrlFor(endpoint), { handshakeTimeout: timeoutMs, perMessageDeflate: false });
    } catch (e) {
      return { ok: false, kind: "unreachable", message: (e as Error).message };
    }
    // The upgrade's socket is the one the WebSocket keeps: its kernel tuple names this connection.
    let socket: Socket | undefined;
    ws.once("upgrade", (res) => (socket = res.socket as Socket));
    const opened = await new Promise<string | undefined>((resolve) => {
      ws.once("open", () => resolve(undefined));
      ws.once("error", (e) => resolve(e.message));
      ws.once("unexpected-response", (_req, res) => resolve(`HTTP ${res.statusCode} instead of a WebSocket upgrade`));
    });
    if (opened !== undefined) {
      ws.terminate();
      return { ok: false, kind: "unreachable", message: opened };
    }
    const connection = new CodexConnection(ws, socket);
    const init = await connection.call<{ userAgent?: string; codexHome?: string }>(
      "initialize",
      {
        clientInfo: { name: o.clientName ?? "clankie_node_agent", title: "Clankie node agent", version: "0.1.0" },
        capabilities: { experimentalApi: true },
      },
      timeoutMs,
    );
    if (!init.ok) {
      connection.close();
      return { ok: false, kind: "handshake_failed", message: init.message };
    }
    connection.notify("initialized", {});
    // A reply's result may be anything (found by fuzzing: `"result": null` threw here).
    const result = (typeof init.result === "object" && init.result !== null ? init.result : {}) as {
      userAgent?: unknown;
      codexHome?: unknown;
    };
    return {
      ok: true,
      connection,
      userAgent: String(result.userAgent ?? ""),
      codexHome: String(result.codexHome ?? ""),
    };
  }

  get isOpen(): boolean {
    return this.closedReason === undefined && this.ws.readyState === WebSocket.OPEN;
  }

  /** The kernel TCP tuple of this connection, from the agent's end; undefined over a unix socket or once closed. */
  get tcpTuple(): TcpTuple | undefined {
    const s = this.socket;
    if (!this.isOpen || !s?.localAddress || !s.remoteAddress || !s.localPort || !s.remotePort) return undefined;
    return {
      localAddress: s.localAddress,
      localPort: s.localPort,
      remoteAddress: s.remoteAddress,
      remotePort: s.remotePort,
    };
  }

  /** This connection's descriptor in the agent when it runs over a unix socket (for its kernel peer proof). */
  get unixSocketFd(): number | undefined {
    const s = this.socket;
    if (!this.isOpen || !s || s.remoteAddress) return undefined;
    // Node keeps the descriptor on the socket's libuv handle; no public API exposes it.
    const fd = (s as unknown as { _handle?: { fd?: number } })._handle?.fd;
    return typeof fd === "number" && fd >= 0 ? fd : undefined;
  }

  /** Why the connection is no longer usable, if it is not. */
  get closeReason(): string | undefined {
    return this.closedReason;
  }

  call<T = unknown>(method: string, params: unknown, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<CallOutcome<T>> {
    if (!this.isOpen)
      return Promise.resolve({
        ok: false,
        kind: "closed",
        message: this.closedReason ?? "the app-server connection is not open",
      });
    const id = this.nextId++;
    return new Promise<CallOutcome<T>>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, kind: "timeout", message: `${method}: no answer within ${timeoutMs} ms` });
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (o: CallOutcome) => void, timer });
      this.ws.send(JSON.stringify({ id, method, params }), (err) => {
        if (err) this.settle(id, { ok: false, kind: "closed", message: `${method}: send failed: ${err.message}` });
      });
    });
  }

  notify(method: string, params: unknown): void {
    if (this.isOpen) this.ws.send(JSON.stringify({ method, params }));
  }

  onNotification(listener: (n: CodexNotification) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onServerRequest(listener: (r: CodexServerRequest) => void): () => void {
    this.requestListeners.add(listener);
    return () => this.requestListeners.delete(listener);
  }

  /** Answers a server request; false when the frame could not be handed to the socket. */
  respond(id: number | string, result: unknown): Promise<boolean> {
    if (!this.isOpen) return Promise.resolve(false);
    return new Promise((resolve) => this.ws.send(JSON.stringify({ id, result }), (err) => resolve(!err)));
  }

  close(): void {
    this.fail("closed", "closed by the node agent");
    this.ws.terminate();
  }

  private settle(id: number, outcome: CallOutcome): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(outcome);
  }

  /** Every pending call ends with the same reason; the connection is unusable afterwards. */
  private fail(kind: "closed" | "garbled", message: string): void {
    if (this.closedReason === undefined) this.closedReason = message;
    for (const id of [...this.pending.keys()]) this.settle(id, { ok: false, kind, message });
    if (kind === "garbled") this.ws.terminate();
  }

  private onFrame(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      // A frame we cannot read might have been the answer to any pending call: none of them
      // can be known any more, so they all end "garbled" and the connection is dropped.
      return this.fail("garbled", `the app-server sent a frame that is not JSON (${text.length} chars)`);
    }
    if (typeof msg !== "object" || msg === null || Array.isArray(msg))
      return this.fail("garbled", "the app-server sent a frame that is not a JSON-RPC object");
    const m = msg as {
      id?: unknown;
      method?: unknown;
      params?: unknown;
      result?: unknown;
      error?: { code?: unknown; message?: unknown };
    };
    if (typeof m.method === "string") {
      // A notification, or a server request (has an id): observed here, never answered here.
      const params = (typeof m.params === "object" && m.params !== null ? m.params : {}) as Record<string, unknown>;
      if (m.id === undefined) {
        for (const l of this.listeners) l({ method: m.method, params });
      } else if (typeof m.id === "number" || typeof m.id === "string") {
        for (const l of this.requestListeners) l({ id: m.id, method: m.method, params });
      }
      return;
    }
    if (typeof m.id !== "number") return this.fail("garbled", "the app-server sent a reply without a numeric id");
    if (m.error !== undefined) {
      this.settle(m.id, {
        ok: false,
        kind: "error",
        code: Number(m.error?.code ?? 0),
        message: String(m.error?.message ?? "unknown error"),
      });
    } else if ("result" in m) {
      this.settle(m.id, { ok: true, result: m.result });
    } else {
      this.fail("garbled", `the app-server sent reply ${m.id} with neither result nor error`);
    }
  }
}
