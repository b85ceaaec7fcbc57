/**
 * tmux as a pane host, for owners who run their agents there: panes, their tty and shell
 * pid from `tmux list-panes -F`, the foreground process group and its processes from the
 * ProofProvider (foreground.ts: /proc on Linux, ps/lsof on macOS), and changes by polling (one `list-panes` per tick). Queries go through one
 * long-lived control-mode client (tmux-control.ts) and fall back to forking `tmux` when it
 * cannot attach. It only reads: nothing here types into a pane, so `send-keys` is never
 * used for delivery.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import type { PaneEvent, PaneHost, PaneInfo, PaneProcessInfo } from "./pane-host.js";
import { foregroundGroupOf, groupProcesses } from "./foreground.js";
import type { ProofProvider } from "../proofs/provider.js";
import { selectProofProvider } from "../proofs/select.js";
import { TmuxControlClient } from "./tmux-control.js";

export interface TmuxPaneHostOptions {
  /** `tmux -L NAME` (a private server); mutually exclusive with socketPath. */
  socketName?: string | undefined;
  /** `tmux -S PATH`. Neither: the user's default server. */
  socketPath?: string | undefined;
  tmuxBin?: string | undefined;
  /** How often subscribe() polls for changes. */
  pollMs?: number | undefined;
  /** Fork one tmux client per query instead of keeping a control-mode client (default false). */
  forkPerQuery?: boolean | undefined;
  /** Where process facts come from (default: this OS's provider). */
  proofs?: ProofProvider | undefined;
}

export type TmuxListOutcome =
  | { ok: true; panes: TmuxPane[] }
  | { ok: false; reason: "no_server" | "tmux_failed"; detail: string };

export interface TmuxPane extends PaneInfo {
  tty: string;
  shellPid: number;
}

const SEP = "\t";
const FORMAT = [
  "#{pane_id}",
  "#{window_id}",
  "#{session_name}",
  "#{pane_tty}",
  "#{pane_pid}",
  "#{pane_current_path}",
  "#{pane_title}",
].join(SEP);

/** Parses `list-panes -F FORMAT` output; malformed lines are skipped, never guessed at. */
export function parseListPanes(stdout: string): TmuxPane[] {
  const panes: TmuxPane[] = [];
  for (const line of stdout.split("\n")) {
    if (!line) continue;
    const [paneId, windowId, session, tty, pid, cwd, ...title] = line.split(SEP);
    const shellPid = Number(pid);
    if (
      !/^%\d+$/.test(paneId ?? "") ||
      !/^@\d+$/.test(windowId ?? "") ||
      session === undefined ||
      !tty ||
      !Number.isInteger(shellPid) ||
      shellPid <= 0
    )
      continue;
    panes.push({
      paneId: paneId!,
      terminalId: windowId!,
      sessionId: session,
      tty,
      shellPid,
      cwd: cwd ?? "",
      title: title.join(SEP),
      agentStatus: "unknown",
    });
  }
  return panes;
}

/** Where tmux keeps the server's socket: `-S PATH`, else $TMUX_TMPDIR (or /tmp)/tmux-UID/NAME. */
export function tmuxSocketFile(
  o: Pick<TmuxPaneHostOptions, "socketName" | "socketPath">,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (o.socketPath) return o.socketPath;
  return join(env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid?.() ?? 0}`, o.socketName ?? "default");
}

export class TmuxPaneHost implements PaneHost {
  readonly kind = "tmux" as const;
  private readonly pollMs: number;
  private readonly control: TmuxControlClient | undefined;
  private readonly proofs: ProofProvider;

  constructor(private readonly o: TmuxPaneHostOptions = {}) {
    this.pollMs = o.pollMs ?? 1000;
    this.proofs = o.proofs ?? selectProofProvider();
    this.control = o.forkPerQuery
      ? undefined
      : new TmuxControlClient(o.tmuxBin ?? "tmux", this.args([]), { socketFile: tmuxSocketFile(o) });
  }

  /** Detaches the control-mode client; later queries fork. */
  close(): void {
    this.control?.close();
  }

  private args(rest: string[]): string[] {
    if (this.o.socketPath) return ["-S", this.o.socketPath, ...rest];
    if (this.o.socketName) return ["-L", this.o.socketName, ...rest];
    return rest;
  }

  private async run(rest: string[]): Promise<{ ok: true; stdout: string } | { ok: false; stderr: string }> {
    const viaControl = await this.control?.command(rest);
    if (viaControl) return viaControl;
    return new Promise((resolve) => {
      // Arguments go straight to execve: no shell ever sees pane titles or paths.
      execFile(
        this.o.tmuxBin ?? "tmux",
        this.args(rest),
        { timeout: 5000, maxBuffer: 4 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err) resolve({ ok: false, stderr: String(stderr || err.message) });
          else resolve({ ok: true, stdout: String(stdout) });
        },
      );
    });
  }

  async list(): Promise<TmuxListOutcome> {
    const r = await this.run(["list-panes", "-a", "-F", FORMAT]);
    if (r.ok) return { ok: true, panes: parseListPanes(r.stdout) };
    // No server running means no panes, which is an answer, not a failure.
    if (/no server running|error connecting|No such file/i.test(r.stderr))
      return { ok: false, reason: "no_server", detail: r.stderr.trim() };
    return { ok: false, reason: "tmux_failed", detail: r.stderr.trim() };
  }

  async listPanes(): Promise<PaneInfo[]> {
    const r = await this.list();
    if (r.ok) return r.panes.map(({ tty: _tty, shellPid: _pid, ...p }) => p);
    if (r.reason === "no_server") return [];
    throw new Error(`tmux list-panes failed: ${r.detail}`);
  }

  async processInfo(paneId: string): Promise<PaneProcessInfo> {
    const r = await this.list();
    const pane = r.ok ? r.panes.find((p) => p.paneId === paneId) : undefined;
    if (!pane) return { paneId, shellPid: -1, foregroundProcessGroupId: -1, tty: "", foregroundProcesses: [] };
    const pgid = await foregroundGroupOf(this.proofs, pane.shellPid);
    return {
      paneId,
      shellPid: pane.shellPid,
      foregroundProcessGroupId: pgid ?? -1,
      tty: pane.tty,
      foregroundProcesses: pgid === undefined ? [] : await groupProcesses(this.proofs, pgid),
    };
  }

  /**
   * Polls `list-panes`; a pane whose shell pid, window or foreground process group changed is
   * `pane_updated`. The first snapshot is taken before this resolves, so no change between
   * subscribing and the caller's own first listing is lost.
   */
  async subscribe(onEvent: (e: PaneEvent) => void): Promise<() => void> {
    const signature = async (p: TmuxPane) =>
      `${p.shellPid}|${p.terminalId}|${(await foregroundGroupOf(this.proofs, p.shellPid)) ?? -1}|${p.title}|${p.cwd}`;
    let known = new Map<string, string>();
    const first = await this.list();
    if (first.ok) for (const p of first.panes) known.set(p.paneId, await signature(p));
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      const r = await this.list();
      if (stopped) return;
      // A failed listing is not "every pane closed": keep the last view and try again.
      if (r.ok || r.reason === "no_server") {
        const now = new Map<string, string>();
        for (const p of r.ok ? r.panes : []) now.set(p.paneId, await signature(p));
        // Reading the signatures awaited the provider: no event after unsubscribing.
        if (stopped) return;
        for (const [id, sig] of now) {
          if (!known.has(id)) onEvent({ kind: "pane_created", paneId: id });
          else if (known.get(id) !== sig) onEvent({ kind: "pane_updated", paneId: id });
        }
        for (const id of known.keys()) if (!now.has(id)) onEvent({ kind: "pane_closed", paneId: id });
        known = now;
      }
      timer = setTimeout(() => void tick(), this.pollMs);
      timer.unref?.();
    };
    timer = setTimeout(() => void tick(), this.pollMs);
    timer.unref?.();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }
}
