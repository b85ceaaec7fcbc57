/**
 * Real tmux on a private socket (`tmux -L <name>`) for proof tests, and a small PaneHost
 * over it that reads panes from tmux and the foreground group from `ps`, independently of
 * the /proc provider under test. Test setup types launch lines into a pane as the owner
 * would; the product never does.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import type { PaneHost, PaneInfo, PaneProcessInfo } from "../../node-agent/panes/pane-host.js";

export class TmuxServer implements PaneHost {
  readonly kind = "tmux" as const;
  readonly socket = `clankie-proof-${randomUUID().slice(0, 8)}`;

  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, "-f", "/dev/null", ...args], { encoding: "utf8" }).trim();
  }

  /** A new session running an interactive shell; returns its pane id. */
  newSession(name: string): string {
    return this.tmux(
      "new-session",
      "-d",
      "-P",
      "-F",
      "#{pane_id}",
      "-s",
      name,
      "-x",
      "160",
      "-y",
      "40",
      "exec /bin/sh -i",
    );
  }

  type(paneId: string, line: string): void {
    this.tmux("send-keys", "-t", paneId, "-l", line);
    this.tmux("send-keys", "-t", paneId, "Enter");
  }

  kill(): void {
    try {
      this.tmux("kill-server");
    } catch {
      // Already gone.
    }
  }

  async listPanes(): Promise<PaneInfo[]> {
    const out = this.tmux(
      "list-panes",
      "-a",
      "-F",
      "#{pane_id}\t#{window_id}\t#{session_name}\t#{pane_title}\t#{pane_current_path}",
    );
    return out
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const [paneId, terminalId, sessionId, title, cwd] = line.split("\t") as [
          string,
          string,
          string,
          string,
          string,
        ];
        return { paneId, terminalId, sessionId, title, cwd, agentStatus: "unknown" as const };
      });
  }

  async processInfo(paneId: string): Promise<PaneProcessInfo> {
    const [pid, tty] = this.tmux("display-message", "-p", "-t", paneId, "#{pane_pid}\t#{pane_tty}").split("\t") as [
      string,
      string,
    ];
    const shellPid = Number(pid);
    const tpgid = Number(execFileSync("ps", ["-o", "tpgid=", "-p", String(shellPid)], { encoding: "utf8" }).trim());
    const rows = execFileSync("ps", ["-eo", "pid=,pgid=,comm="], { encoding: "utf8" })
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => Number(f[1]) === tpgid);
    return {
      paneId,
      shellPid,
      foregroundProcessGroupId: tpgid,
      tty,
      foregroundProcesses: rows.map((f) => ({ pid: Number(f[0]), name: f[2] ?? "", argv: [] })),
    };
  }

  async subscribe(): Promise<() => void> {
    return () => {};
  }
}

/** Waits for a JSON report file a test process writes once it is ready. */
export async function readReport<T>(path: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return JSON.parse(readFileSync(path, "utf8")) as T;
}
