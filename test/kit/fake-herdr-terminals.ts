/**
 * Real terminals behind the fake Herdr (test/kit/fake-herdr.ts), so a hire through Herdr
 * launches a real harness in a real pane: each Herdr pane is a tmux pane on a private tmux
 * server (`tmux -S <temp>`), which stands in for Herdr's own PTY. What the fake stands in
 * for, and nothing more: `pane.split` opens the terminal in `cwd` running a shell, with the
 * environment Herdr gives every pane (HERDR_ENV, HERDR_SOCKET_PATH, HERDR_{WORKSPACE,TAB,PANE}_ID);
 * `agent.start` replaces that shell with the kind's binary from the owner's Herdr
 * integration (binary + environment per kind: agent.start itself carries no environment)
 * and the caller's args; `pane.read` is the visible screen; `pane.process_info` is the
 * terminal's real foreground process group, read through the Linux ProofProvider. Every
 * tmux call is asynchronous, so the fake never stalls the test process's event loop (the
 * controller and agent under test share it, and the delivery gate measures proof ages).
 */
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { LinuxProofProvider } from "../../node-agent/proofs/linux.js";
import type { ProcessIdentity } from "../../node-agent/proofs/provider.js";
import { foregroundGroupOf, groupProcesses } from "../../node-agent/panes/foreground.js";
import { tempDir } from "./test-db.js";

export interface HerdrIntegration {
  /** The binary Herdr starts for this agent kind. */
  bin: string;
  /** The environment the owner's integration gives that agent (homes, provider settings, the Pi socket folder). */
  env: Record<string, string>;
}

export interface HerdrTerminals {
  readonly tmuxSocket: string;
  /** Opens a terminal for Herdr pane `paneId` running a shell; its tmux pane id. */
  open(paneId: string, cwd: string, env: Record<string, string>): Promise<string>;
  /** Replaces the pane's shell with the kind's binary and args (exec, as Herdr's launch does). */
  start(paneId: string, integration: HerdrIntegration, args: string[], env: Record<string, string>): Promise<void>;
  alive(paneId: string): Promise<boolean>;
  read(paneId: string): Promise<string>;
  processInfo(paneId: string): Promise<
    | {
        shell_pid: number | null;
        foreground_process_group_id: number | null;
        tty: string | null;
        foreground_processes: { pid: number; name: string; argv: string[] }[];
      }
    | undefined
  >;
  close(paneId: string): Promise<void>;
  /** tmux pane ids by Herdr pane id, for a test to compare with what it sees. */
  backing(): Map<string, string>;
  shutdown(): void;
}

export function startHerdrTerminals(): HerdrTerminals {
  const tmuxSocket = join(tempDir("fake-herdr-tmux"), "tmux.sock");
  const provider = new LinuxProofProvider();
  /** Each pane's terminal and the lifetime running in it (taken from tmux once per open/start, then read from the kernel). */
  const panes = new Map<string, { tmux: string; cwd: string; proc: ProcessIdentity | undefined }>();
  const tmux = (...a: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile("tmux", ["-S", tmuxSocket, ...a], { encoding: "utf8", timeout: 10_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(String(stderr || err.message).trim())) : resolve(String(stdout)),
      ),
    );
  const envArgs = (env: Record<string, string>) => Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  const pid = async (tmuxPane: string): Promise<number | undefined> => {
    try {
      const out = (await tmux("display-message", "-p", "-t", tmuxPane, "#{pane_id}\t#{pane_pid}\t#{pane_dead}"))
        .trim()
        .split("\t");
      return out[0] === tmuxPane && out[2] !== "1" ? Number(out[1]) : undefined;
    } catch {
      return undefined;
    }
  };
  const identity = async (tmuxPane: string): Promise<ProcessIdentity | undefined> => {
    const n = await pid(tmuxPane);
    const f = n === undefined ? undefined : await provider.identify(n);
    return f?.known ? { pid: f.value.pid, startTime: f.value.startTime } : undefined;
  };
  /** The pane's process, if that lifetime still runs: one kernel read, no fork (Herdr answers from its own state too). */
  const running = async (paneId: string): Promise<ProcessIdentity | undefined> => {
    const p = panes.get(paneId)?.proc;
    if (!p) return undefined;
    const now = await provider.identify(p.pid);
    return now.known && now.value.startTime === p.startTime ? p : undefined;
  };
  return {
    tmuxSocket,
    async open(paneId, cwd, env) {
      const has = await tmux("has-session", "-t", "=herdr").then(
        () => true,
        () => false,
      );
      const fmt = ["-P", "-F", "#{pane_id}"];
      const shell = ["/bin/sh"];
      const out = has
        ? await tmux("new-window", "-d", ...fmt, "-t", "=herdr:", "-c", cwd, ...envArgs(env), "--", ...shell)
        : await tmux(
            "new-session",
            "-d",
            ...fmt,
            "-s",
            "herdr",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
            cwd,
            ...envArgs(env),
            "--",
            ...shell,
          );
      const tmuxPane = out.trim();
      panes.set(paneId, { tmux: tmuxPane, cwd, proc: await identity(tmuxPane) });
      return tmuxPane;
    },
    async start(paneId, integration, args, env) {
      const p = panes.get(paneId);
      if (!p) throw new Error(`no terminal for pane ${paneId}`);
      await tmux(
        "respawn-pane",
        "-k",
        "-t",
        p.tmux,
        "-c",
        p.cwd,
        ...envArgs({ ...env, ...integration.env }),
        "--",
        integration.bin,
        ...args,
      );
      p.proc = await identity(p.tmux);
    },
    async alive(paneId) {
      return (await running(paneId)) !== undefined;
    },
    async read(paneId) {
      const p = panes.get(paneId);
      return p ? tmux("capture-pane", "-p", "-t", p.tmux).catch(() => "") : "";
    },
    async processInfo(paneId) {
      const shellPid = (await running(paneId))?.pid;
      if (shellPid === undefined) return undefined;
      const pgid = await foregroundGroupOf(provider, shellPid);
      const shell = await provider.identify(shellPid);
      const fg = shell.known ? await provider.foregroundGroup(shell.value) : undefined;
      return {
        shell_pid: shellPid,
        foreground_process_group_id: pgid ?? null,
        tty: fg?.known ? fg.value.tty : null,
        foreground_processes: pgid === undefined ? [] : await groupProcesses(provider, pgid),
      };
    },
    async close(paneId) {
      const p = panes.get(paneId);
      panes.delete(paneId);
      // Already gone is fine.
      if (p) await tmux("kill-pane", "-t", p.tmux).catch(() => undefined);
    },
    backing: () => new Map([...panes].map(([k, v]) => [k, v.tmux])),
    shutdown() {
      // Synchronous: the fake's close() must leave no harness running behind it.
      try {
        execFileSync("tmux", ["-S", tmuxSocket, "kill-server"], { stdio: "ignore" });
      } catch {
        // no server
      }
    },
  };
}
