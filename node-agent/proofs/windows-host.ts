/**
 * The long-lived PowerShell host the Windows provider asks (issue 15: a PowerShell start
 * costs hundreds of ms, so one per proof could never meet the 250 ms bound). One process,
 * kept for the agent's life: requests are one JSON line each on its stdin, `{"id":N,...}`,
 * answers one JSON line each on its stdout, `{"id":N,"ok":true,"data":…}` or
 * `{"id":N,"ok":false,"error":"…"}`, matched by id. A host that exits, writes a line it
 * should not, or does not answer in time is killed; every request it held is answered
 * `race` (never guessed), and the next request starts a new host. The program is injectable,
 * so the same transport is tested against a real long-lived process here.
 */
import { ChildProcess, spawn } from "node:child_process";
import type { UnknownReason } from "./provider.js";

export type HostAnswer = { ok: true; data: string } | { ok: false; reason: UnknownReason; detail: string };

/** What the Windows provider asks; the only seam between it and the host. */
export type WindowsQuery =
  | { op: "processes" }
  | { op: "tcp"; state: "Listen" | "Established"; pid?: number; ports?: [number, number] }
  | { op: "detail"; pid: number };

export type WindowsChannel = (q: WindowsQuery) => Promise<HostAnswer>;

export interface PowerShellHostOptions {
  /** The host program and its arguments (default: powershell.exe running windows-host-script.ts). */
  file: string;
  args: readonly string[];
  /** How long one answer may take, once the host is ready, before it is taken to be stuck (default 5 s). */
  timeoutMs?: number;
  /** How long the host may take to say it is ready (Add-Type compiles at start; default 20 s). */
  startTimeoutMs?: number;
  /** The longest answer line accepted (default 16 MiB); a longer one kills the host. */
  maxLineBytes?: number;
  /** The least time between two starts, so a host that dies at once is not restarted in a loop (default 1 s). */
  restartGapMs?: number;
}

interface Pending {
  resolve: (a: HostAnswer) => void;
  /** Started when the host is ready: its start-up is not the answer's time. */
  timer: NodeJS.Timeout | undefined;
}

export class PowerShellHost {
  private child: ChildProcess | undefined;
  private buffered = "";
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private lastStartMs = -Infinity;
  private isReady = false;
  private startTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** How many hosts were started: a test and an operator can see restarts. */
  starts = 0;

  constructor(private readonly o: PowerShellHostOptions) {}

  readonly ask: WindowsChannel = (q) => this.request(q);

  private start(): ChildProcess | HostAnswer {
    const now = performance.now();
    if (now - this.lastStartMs < (this.o.restartGapMs ?? 1000))
      return { ok: false, reason: "race", detail: "the PowerShell host exited moments ago; not restarted yet" };
    this.lastStartMs = now;
    this.starts++;
    const child = spawn(this.o.file, [...this.o.args], { stdio: ["pipe", "pipe", "ignore"], windowsHide: true });
    this.buffered = "";
    this.isReady = false;
    this.startTimer = setTimeout(
      () => this.fail(child, "race", `the PowerShell host was not ready within ${this.o.startTimeoutMs ?? 20_000} ms`),
      this.o.startTimeoutMs ?? 20_000,
    );
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => this.onData(child, chunk));
    child.on("error", (e: NodeJS.ErrnoException) =>
      this.fail(
        child,
        e.code === "ENOENT" ? "unsupported" : "race",
        e.code === "ENOENT" ? `${this.o.file} is not available` : `the PowerShell host failed: ${e.message}`,
      ),
    );
    child.on("exit", (code, signal) =>
      this.fail(child, "race", `the PowerShell host exited (${signal ?? code}) before answering`),
    );
    child.stdin!.on("error", () => {});
    return child;
  }

  private onData(child: ChildProcess, chunk: string): void {
    if (child !== this.child) return;
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf("\n")) >= 0) {
      const line = this.buffered.slice(0, nl).replace(/\r$/, "");
      this.buffered = this.buffered.slice(nl + 1);
      if (line.trim()) this.onLine(child, line);
      if (child !== this.child) return;
    }
    if (Buffer.byteLength(this.buffered) > (this.o.maxLineBytes ?? 16 * 1024 * 1024))
      this.fail(child, "race", "the PowerShell host wrote an answer longer than the limit");
  }

  private onLine(child: ChildProcess, line: string): void {
    let msg: { id?: unknown; ok?: unknown; data?: unknown; error?: unknown; ready?: unknown };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      return this.fail(child, "race", `the PowerShell host wrote a line that is not JSON: ${line.slice(0, 120)}`);
    }
    if (msg.ready === true) {
      this.isReady = true;
      clearTimeout(this.startTimer);
      for (const [id, p] of this.pending) p.timer ??= this.answerTimer(child, id);
      return;
    }
    const p = typeof msg.id === "number" ? this.pending.get(msg.id) : undefined;
    // An answer to nothing asked means the two sides disagree about the stream: start over.
    if (!p) return this.fail(child, "race", `the PowerShell host answered an unknown request ${String(msg.id)}`);
    this.pending.delete(msg.id as number);
    clearTimeout(p.timer);
    if (msg.ok === true) p.resolve({ ok: true, data: JSON.stringify(msg.data ?? null) });
    else p.resolve({ ok: false, reason: "race", detail: `PowerShell: ${String(msg.error ?? "failed").slice(0, 300)}` });
  }

  private answerTimer(child: ChildProcess, _id: number): NodeJS.Timeout {
    return setTimeout(
      () => this.fail(child, "race", `the PowerShell host did not answer within ${this.o.timeoutMs ?? 5000} ms`),
      this.o.timeoutMs ?? 5000,
    );
  }

  /** Kills `child` (if still current) and answers everything it held with `reason`. */
  private fail(child: ChildProcess, reason: UnknownReason, detail: string): void {
    if (child !== this.child) return;
    this.child = undefined;
    clearTimeout(this.startTimer);
    child.kill();
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve({ ok: false, reason, detail });
      this.pending.delete(id);
    }
  }

  private request(q: WindowsQuery): Promise<HostAnswer> {
    if (this.closed) return Promise.resolve({ ok: false, reason: "race", detail: "the PowerShell host is closed" });
    if (!this.child) {
      const started = this.start();
      if (!(started instanceof ChildProcess)) return Promise.resolve(started);
      this.child = started;
    }
    const child = this.child;
    const id = this.nextId++;
    return new Promise<HostAnswer>((resolve) => {
      this.pending.set(id, { resolve, timer: this.isReady ? this.answerTimer(child, id) : undefined });
      child.stdin!.write(`${JSON.stringify({ id, ...q })}\n`);
    });
  }

  close(): void {
    this.closed = true;
    if (this.child) this.fail(this.child, "race", "the PowerShell host was closed");
  }
}
