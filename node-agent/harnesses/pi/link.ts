/**
 * One live control link to a Pi session, speaking Pi's RPC commands as strict JSONL (LF only:
 * Node's readline also splits on U+2028/U+2029, which are legal inside JSON strings). The
 * link says exactly how far a command got: never written, answered, or lost after writing.
 * `startPiRpc` runs `pi --mode rpc` as the agent's own child; the Pi extension serves the
 * same commands on a unix socket for a Pi TUI in a pane (pi-extension-link.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";

export type PiReply =
  | { kind: "ok"; data: Record<string, unknown> }
  | { kind: "refused"; error: string }
  | { kind: "not_sent"; detail: string }
  | { kind: "lost"; detail: string };

export type PiEvent = { type: string } & Record<string, unknown>;

/**
 * Where a link ends (rule 3). A headless `pi --mode rpc` child proves no control of an
 * interactive session, so it is never a seat. The extension's hello names the Pi process
 * serving it and exactly which commands and deliverAs routes it offers: that is all the
 * adapter may advertise (rule 42).
 */
export type PiLinkOrigin =
  | { kind: "headless-rpc" }
  | { kind: "extension"; pid: number; commands: string[]; deliverAs: string[] };

export interface PiLink {
  readonly isOpen: boolean;
  readonly origin: PiLinkOrigin;
  request(command: { type: string } & Record<string, unknown>, id: string, timeoutMs: number): Promise<PiReply>;
  onEvent(listener: (e: PiEvent) => void): () => void;
  close(): Promise<void>;
}

/** Splits a byte stream into LF-terminated records; a trailing CR is dropped. */
export class JsonlSplitter {
  private buffer = "";
  constructor(private readonly onRecord: (line: string) => void) {}
  push(chunk: string): void {
    this.buffer += chunk;
    let at: number;
    while ((at = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, at).replace(/\r$/, "");
      this.buffer = this.buffer.slice(at + 1);
      if (line.trim()) this.onRecord(line);
    }
  }
}

/** A PiLink over any pair of streams (a child's stdio, or a socket after its handshake). */
export class StreamPiLink implements PiLink {
  private open = true;
  /** Headless until a handshake (pi-extension-link.ts) proves otherwise. */
  origin: PiLinkOrigin = { kind: "headless-rpc" };
  /** Each command in flight by our id, with the command type its response must echo. */
  private readonly pending = new Map<string, { command: string; resolve: (r: PiReply) => void }>();
  private readonly listeners = new Set<(e: PiEvent) => void>();

  constructor(
    input: Readable,
    private readonly output: Writable,
    private readonly onClose: () => Promise<void> = async () => {},
  ) {
    const splitter = new JsonlSplitter((line) => this.receive(line));
    input.setEncoding("utf8");
    input.on("data", (c: string) => splitter.push(c));
    const closed = () => this.shut("the Pi link closed");
    input.once("close", closed);
    input.once("end", closed);
    input.once("error", closed);
    output.once("error", closed);
  }

  get isOpen(): boolean {
    return this.open;
  }

  private receive(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // Not ours to judge: Pi may print non-protocol lines; they answer nothing.
    }
    if (msg.type === "response" && typeof msg.id === "string") {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      // Pi echoes both our id and the command's type. An answer under our id for another command
      // is not this command's answer: what happened to it is unknown, never refused or accepted.
      if (msg.command !== p.command) {
        p.resolve({
          kind: "lost",
          detail: `the response under id ${msg.id} echoed command ${JSON.stringify(msg.command)}, not ${p.command}`,
        });
        return;
      }
      p.resolve(
        msg.success === true
          ? { kind: "ok", data: (msg.data as Record<string, unknown>) ?? {} }
          : { kind: "refused", error: String(msg.error ?? "refused") },
      );
      return;
    }
    if (typeof msg.type === "string") for (const l of this.listeners) l(msg as PiEvent);
  }

  private shut(detail: string): void {
    if (!this.open) return;
    this.open = false;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.resolve({ kind: "lost", detail });
    }
  }

  request(command: { type: string } & Record<string, unknown>, id: string, timeoutMs: number): Promise<PiReply> {
    if (!this.open) return Promise.resolve({ kind: "not_sent", detail: "the Pi link is closed; nothing was written" });
    if (this.pending.has(id))
      return Promise.resolve({ kind: "not_sent", detail: `a command with id ${id} is already in flight` });
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        if (this.pending.delete(id)) resolve({ kind: "lost", detail: `no response within ${timeoutMs} ms` });
      }, timeoutMs);
      this.pending.set(id, {
        command: command.type,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
      });
      try {
        this.output.write(JSON.stringify({ ...command, id }) + "\n");
      } catch (e) {
        this.pending.delete(id);
        clearTimeout(timer);
        resolve({ kind: "not_sent", detail: `write failed: ${(e as Error).message}` });
      }
    });
  }

  onEvent(listener: (e: PiEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.shut("closed by the agent");
    await this.onClose();
  }
}

export interface PiRpcLaunch {
  bin: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** Runs `pi --mode rpc …` as this agent's child. Arguments are an argv array: never a shell. */
export function startPiRpc(launch: PiRpcLaunch): StreamPiLink & { readonly pid: number } {
  const child: ChildProcess = spawn(launch.bin, ["--mode", "rpc", ...launch.args], {
    cwd: launch.cwd,
    env: launch.env,
    stdio: ["pipe", "pipe", "ignore"],
  });
  const link = new StreamPiLink(child.stdout!, child.stdin!, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        child.kill("SIGKILL");
        resolve();
      }, 5000);
      child.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
    });
  });
  return Object.assign(link, { pid: child.pid ?? -1 });
}
