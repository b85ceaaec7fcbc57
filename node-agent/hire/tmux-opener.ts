/**
 * tmux as the hire's pane host: a window in the `clankie-hires` session (created when
 * missing), the harness run straight from execve with the hire marker in its environment
 * and in a pane option (`@clankie_hire`). Screens are read with capture-pane; nothing is
 * ever typed into the pane.
 */
import { execFile } from "node:child_process";
import { HIRE_ENV, type OpenOutcome, type PaneLiveness, type PaneOpener } from "./pane-opener.js";

export const HIRE_SESSION = "clankie-hires";
const OPTION = "@clankie_hire";

export class TmuxPaneOpener implements PaneOpener {
  readonly kind = "tmux" as const;

  constructor(
    private readonly o: {
      socketPath?: string | undefined;
      socketName?: string | undefined;
      tmuxBin?: string | undefined;
    } = {},
  ) {}

  private run(args: string[]): Promise<{ ok: true; stdout: string } | { ok: false; stderr: string }> {
    const base = this.o.socketPath ? ["-S", this.o.socketPath] : this.o.socketName ? ["-L", this.o.socketName] : [];
    return new Promise((resolve) => {
      execFile(
        this.o.tmuxBin ?? "tmux",
        [...base, ...args],
        { timeout: 10_000, maxBuffer: 4 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err) resolve({ ok: false, stderr: String(stderr || err.message) });
          else resolve({ ok: true, stdout: String(stdout) });
        },
      );
    });
  }

  async open(o: {
    hireId: string;
    title: string;
    cwd: string;
    argv: string[];
    env: Record<string, string>;
    harness: string;
  }): Promise<OpenOutcome> {
    const env = { ...o.env, [HIRE_ENV]: o.hireId };
    const envArgs = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    const name = `${o.harness}-${o.hireId.slice(0, 8)}`;
    const fmt = ["-P", "-F", "#{pane_id}\t#{session_name}"];
    const has = await this.run(["has-session", "-t", `=${HIRE_SESSION}`]);
    // With more than one word after the options, tmux execs the argv itself: no shell sees it.
    const made = has.ok
      ? await this.run([
          "new-window",
          "-d",
          ...fmt,
          "-t",
          `=${HIRE_SESSION}:`,
          "-n",
          name,
          "-c",
          o.cwd,
          ...envArgs,
          "--",
          ...o.argv,
        ])
      : await this.run([
          "new-session",
          "-d",
          ...fmt,
          "-s",
          HIRE_SESSION,
          "-n",
          name,
          "-x",
          "200",
          "-y",
          "50",
          "-c",
          o.cwd,
          ...envArgs,
          "--",
          ...o.argv,
        ]);
    if (!made.ok)
      return { ok: false, reason: "launch_failed", detail: `tmux could not open a pane: ${made.stderr.trim()}` };
    const [paneId, session] = made.stdout.trim().split("\t");
    if (!paneId || !/^%\d+$/.test(paneId))
      return { ok: false, reason: "launch_failed", detail: `tmux answered without a pane id: ${made.stdout.trim()}` };
    // The marker, the title, and a dead pane kept for reading its last screen (it is closed by the hire).
    await this.run(["set-option", "-p", "-t", paneId, OPTION, o.hireId]);
    await this.run(["set-option", "-p", "-t", paneId, "remain-on-exit", "on"]);
    await this.run(["select-pane", "-t", paneId, "-T", o.title]);
    return { ok: true, pane: { paneId, session: session ?? HIRE_SESSION } };
  }

  async liveness(paneId: string): Promise<PaneLiveness> {
    const r = await this.run(["display-message", "-p", "-t", paneId, "#{pane_id}\t#{pane_dead}"]);
    if (!r.ok || !r.stdout.startsWith(paneId)) return { state: "gone", screen: "" };
    const screen = await this.run(["capture-pane", "-p", "-t", paneId]);
    return { state: r.stdout.trim().endsWith("\t1") ? "dead" : "running", screen: screen.ok ? screen.stdout : "" };
  }

  async close(paneId: string): Promise<void> {
    await this.run(["kill-pane", "-t", paneId]);
  }

  async panesOf(hireId: string): Promise<{ paneId: string; session: string }[]> {
    const r = await this.run(["list-panes", "-a", "-F", `#{pane_id}\t#{session_name}\t#{${OPTION}}`]);
    if (!r.ok) {
      if (/no server running|error connecting|No such file/i.test(r.stderr)) return [];
      throw new Error(`tmux list-panes failed: ${r.stderr.trim()}`);
    }
    return r.stdout
      .split("\n")
      .map((l) => l.split("\t"))
      .filter((f) => f[2] === hireId)
      .map((f) => ({ paneId: f[0]!, session: f[1]! }));
  }
}
