/**
 * One long-lived tmux control-mode client (`tmux -C attach -f ignore-size,read-only,no-output`)
 * that answers the pane host's read-only queries without forking a tmux client per query:
 * a fork costs 6-14 ms here, a control-mode round trip well under one, and the pane proof
 * asks on every write (its age counts against the 250 ms freshness gate).
 *
 * Only listing commands are accepted (an allowlist, not a convention): this client never
 * types into a pane. `ignore-size` keeps it from resizing anyone's windows, `no-output`
 * keeps pane output off the pipe. Replies are matched to commands in order: tmux answers
 * each command from this client with one `%begin … 1` … `%end|%error … 1` block.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";

export type ControlReply = { ok: true; stdout: string } | { ok: false; stderr: string };

/** The commands a pane host may ask; anything else is refused before it reaches tmux. */
const READ_ONLY_COMMANDS = new Set(["list-panes", "list-windows", "list-sessions", "display-message"]);

/** Quote one argument for tmux's command parser; refuses what single quotes cannot carry. */
export function quoteTmuxArgument(arg: string): string | undefined {
  if (/['\n\r\0]/.test(arg)) return undefined;
  return `'${arg}'`;
}

export interface TmuxControlOptions {
  /** The server's socket file: no file, no server — and attaching would start one just to fail. */
  socketFile?: string | undefined;
  timeoutMs?: number;
  /** First pause before trying to attach again; it doubles up to maxRetryAfterMs. */
  retryAfterMs?: number;
  maxRetryAfterMs?: number;
}

interface Pending {
  /** `undefined`: the client went away before answering; the caller asks again by forking. */
  resolve: (r: ControlReply | undefined) => void;
  timer: NodeJS.Timeout;
}

export class TmuxControlClient {
  private child: ChildProcess | undefined;
  private readonly pending: Pending[] = [];
  private block: string[] | undefined;
  private ownBlock = false;
  /** Set when the client could not attach (no session, old tmux); retried after a pause that doubles. */
  private downUntilMs = 0;
  private failures = 0;

  private readonly timeoutMs: number;
  private readonly retryAfterMs: number;
  private readonly maxRetryAfterMs: number;

  constructor(
    private readonly bin: string,
    private readonly serverArgs: string[],
    private readonly o: TmuxControlOptions = {},
  ) {
    this.timeoutMs = o.timeoutMs ?? 5000;
    this.retryAfterMs = o.retryAfterMs ?? 1000;
    this.maxRetryAfterMs = o.maxRetryAfterMs ?? 30_000;
  }

  /** Runs one read-only command; `undefined` when the control client is unavailable (fall back). */
  async command(args: string[]): Promise<ControlReply | undefined> {
    if (!READ_ONLY_COMMANDS.has(args[0] ?? ""))
      throw new Error(`tmux control client: ${args[0]} is not a read-only query`);
    const quoted = args.map(quoteTmuxArgument);
    if (quoted.some((q) => q === undefined)) return undefined;
    const child = this.attach();
    if (!child?.stdin?.writable) return undefined;
    return new Promise<ControlReply | undefined>((resolve) => {
      const timer = setTimeout(() => {
        // A silent tmux is a broken client: drop it; the caller falls back to forking.
        this.down(`no reply in ${this.timeoutMs} ms`);
      }, this.timeoutMs);
      timer.unref?.();
      this.pending.push({ resolve: (r) => resolve(r), timer });
      child.stdin!.write(`${quoted.join(" ")}\n`);
    });
  }

  close(): void {
    this.down("closed");
    this.downUntilMs = Number.POSITIVE_INFINITY;
  }

  private attach(): ChildProcess | undefined {
    if (this.child) return this.child;
    if (Date.now() < this.downUntilMs) return undefined;
    if (this.o.socketFile !== undefined && !existsSync(this.o.socketFile)) {
      this.down("no tmux server socket");
      return undefined;
    }
    // Arguments go straight to execve; the child dies with our stdin (tmux exits on EOF).
    const child = spawn(
      this.bin,
      [...this.serverArgs, "-C", "attach-session", "-f", "ignore-size,read-only,no-output"],
      { stdio: ["pipe", "pipe", "ignore"] },
    );
    this.child = child;
    this.block = undefined;
    child.unref();
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    child.stdin!.on("error", () => this.down("stdin closed"));
    child.once("error", () => this.down("could not start tmux"));
    child.once("exit", () => this.down("tmux control client exited"));
    createInterface({ input: child.stdout! }).on("line", (line) => this.onLine(line));
    return child;
  }

  private onLine(line: string): void {
    const m = /^%(begin|end|error) \d+ \d+ (\d+)$/.exec(line);
    if (m && m[1] === "begin") {
      this.block = [];
      this.ownBlock = m[2] === "1";
      return;
    }
    if (m && this.block) {
      const body = this.block.join("\n");
      this.block = undefined;
      if (!this.ownBlock) {
        // The attach command's own reply: an %error here means nothing to attach to.
        if (m[1] === "error") this.down(body || "attach failed");
        return;
      }
      const p = this.pending.shift();
      if (!p) return;
      this.failures = 0;
      clearTimeout(p.timer);
      p.resolve(m[1] === "end" ? { ok: true, stdout: body ? `${body}\n` : "" } : { ok: false, stderr: body });
      return;
    }
    if (this.block) this.block.push(line);
    // Lines outside a block are notifications (%session-changed, %exit, ...): not ours to act on.
  }

  /** Why the client last went down, for diagnostics. */
  lastDownReason = "";

  private down(why: string): void {
    this.lastDownReason = why;
    const child = this.child;
    this.child = undefined;
    this.block = undefined;
    this.downUntilMs = Date.now() + Math.min(this.maxRetryAfterMs, this.retryAfterMs * 2 ** this.failures);
    this.failures++;
    if (child && child.exitCode === null) child.kill();
    for (const p of this.pending.splice(0)) {
      clearTimeout(p.timer);
      p.resolve(undefined);
    }
  }
}
