/**
 * One NDJSON connection to a Herdr server's unix socket (protocol 20): one JSON request per
 * line, `{id, result}` or `{id, error:{code,message}}` back, and on a subscription
 * connection pushed `{event, data}` lines after the acknowledgement. Every call ends in a
 * typed outcome; a line that is not JSON ends every pending call ("garbled") and drops the
 * connection, since any of them might have been its answer. Only reading methods are ever
 * sent from this codebase; the typing methods (pane.send_*, agent.prompt, ...) are refused
 * here so no caller can use them for delivery by mistake. The one exception is
 * `pressEscape`: Claude's guarded stop (ADR 0207, VUH-2680), a fixed single `esc` key with no
 * caller-supplied text.
 */
import { createConnection, type Socket } from "node:net";

export type HerdrOutcome<T = Record<string, unknown>> =
  | { ok: true; result: T }
  | { ok: false; kind: "error"; code: string; message: string }
  | { ok: false; kind: "closed" | "garbled" | "timeout" | "unreachable" | "forbidden"; message: string };

export interface HerdrEventLine {
  event: string;
  data: Record<string, unknown>;
}

/** Methods that type into a pane or prompt an agent: never delivery, so never sent. */
export const TYPING_METHODS: readonly string[] = [
  "pane.send_text",
  "pane.send_keys",
  "pane.send_input",
  "agent.send_keys",
  "agent.send",
  "agent.prompt",
];

/** A line longer than this is not a Herdr message: the connection is dropped as garbled. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;

export class HerdrConnection {
  private nextId = 1;
  private buffer = "";
  private readonly pending = new Map<string, { resolve: (o: HerdrOutcome) => void; timer: NodeJS.Timeout }>();
  private readonly eventListeners = new Set<(e: HerdrEventLine) => void>();
  private readonly closeListeners = new Set<(reason: string) => void>();
  private closedReason: string | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.onData(chunk));
    socket.on("close", () => this.fail("closed", "the Herdr socket closed"));
    socket.on("error", (e) => this.fail("closed", `the Herdr socket failed: ${e.message}`));
  }

  static open(
    socketPath: string,
    timeoutMs = 5000,
  ): Promise<{ ok: true; connection: HerdrConnection } | { ok: false; message: string }> {
    return new Promise((resolve) => {
      const socket = createConnection(socketPath);
      const timer = setTimeout(() => {
        socket.destroy();
        resolve({ ok: false, message: `no connection to ${socketPath} within ${timeoutMs} ms` });
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve({ ok: true, connection: new HerdrConnection(socket) });
      });
      socket.once("error", (e) => {
        clearTimeout(timer);
        resolve({ ok: false, message: e.message });
      });
    });
  }

  get isOpen(): boolean {
    return this.closedReason === undefined;
  }

  call<T = Record<string, unknown>>(
    method: string,
    params: Record<string, unknown> = {},
    timeoutMs = 5000,
  ): Promise<HerdrOutcome<T>> {
    if (TYPING_METHODS.includes(method))
      return Promise.resolve({
        ok: false,
        kind: "forbidden",
        message: `${method} types into a pane; it is never used`,
      });
    return this.send<T>(method, params, timeoutMs);
  }

  /** The single Escape of Claude's guarded stop, in exactly `paneId`: the only key ever sent, never text. */
  pressEscape(paneId: string, timeoutMs = 5000): Promise<HerdrOutcome> {
    return this.send("pane.send_keys", { pane_id: paneId, keys: ["esc"] }, timeoutMs);
  }

  private send<T>(method: string, params: Record<string, unknown>, timeoutMs: number): Promise<HerdrOutcome<T>> {
    if (!this.isOpen) return Promise.resolve({ ok: false, kind: "closed", message: this.closedReason ?? "closed" });
    const id = `clankie_${this.nextId++}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, kind: "timeout", message: `${method}: no answer within ${timeoutMs} ms` });
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (o: HerdrOutcome) => void, timer });
      this.socket.write(JSON.stringify({ id, method, params }) + "\n");
    });
  }

  onEvent(listener: (e: HerdrEventLine) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  onClose(listener: (reason: string) => void): () => void {
    if (!this.isOpen) {
      listener(this.closedReason!);
      return () => {};
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  close(): void {
    this.fail("closed", "closed by the node agent");
  }

  private fail(kind: "closed" | "garbled", message: string): void {
    const first = this.closedReason === undefined;
    if (first) this.closedReason = message;
    for (const [id, p] of [...this.pending]) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.resolve({ ok: false, kind, message });
    }
    this.socket.destroy();
    if (first) for (const l of this.closeListeners) l(message);
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.onLine(line);
      if (!this.isOpen) return;
    }
    if (this.buffer.length > MAX_LINE_BYTES) this.fail("garbled", "the Herdr socket sent an over-long line");
  }

  private onLine(line: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      return this.fail("garbled", `the Herdr socket sent a line that is not JSON (${line.length} chars)`);
    }
    if (typeof msg !== "object" || msg === null || Array.isArray(msg))
      return this.fail("garbled", "the Herdr socket sent a line that is not an object");
    const m = msg as {
      id?: unknown;
      result?: unknown;
      error?: { code?: unknown; message?: unknown };
      event?: unknown;
      data?: unknown;
    };
    if (typeof m.event === "string") {
      const e = {
        event: m.event,
        data: (typeof m.data === "object" && m.data !== null ? m.data : {}) as Record<string, unknown>,
      };
      for (const l of this.eventListeners) l(e);
      return;
    }
    if (typeof m.id !== "string") return this.fail("garbled", "the Herdr socket sent a reply without a string id");
    const p = this.pending.get(m.id);
    if (!p) return; // a late answer to a call that already timed out
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error !== undefined)
      p.resolve({
        ok: false,
        kind: "error",
        code: String(m.error?.code ?? "unknown"),
        message: String(m.error?.message ?? ""),
      });
    else if (typeof m.result === "object" && m.result !== null)
      p.resolve({ ok: true, result: m.result as Record<string, unknown> });
    else p.resolve({ ok: false, kind: "garbled", message: `reply ${m.id} has neither an object result nor an error` });
  }
}
