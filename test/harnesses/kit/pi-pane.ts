/**
 * A real Pi TUI in its own private tmux server, as an owner runs it for a node agent to
 * discover: the Clankie extension (its seat socket in the agent's Pi socket folder) and,
 * for a worker, the worker tools extension (pi-worker-tools.js) bound to the agent's state.
 * With `sessionDir` Pi keeps its session file there (rule 42's fence reads it); without, no
 * session file. With `socketDir` the extension's socket opens there instead, for a test proxy.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const TMUX = "/usr/bin/tmux";
const dist = (f: string) => fileURLToPath(new URL(`../../../dist/worker/${f}`, import.meta.url));

export interface PiPane {
  readonly tmuxSocket: string;
  close(): void;
}

export function startPiPane(o: {
  bin: string;
  root: string;
  mockUrl: string;
  agentStateDir: string;
  workerTools: boolean;
  sessionDir?: string;
  socketDir?: string;
  /** Pi's own Anthropic model and no key for it (no mock provider): Pi refuses every turn (issue 35). */
  keyless?: boolean;
}): PiPane {
  const agentDir = join(o.root, "home/.pi/agent");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(join(o.root, "work"), { recursive: true });
  if (!o.keyless)
    writeFileSync(
      join(agentDir, "models.json"),
      JSON.stringify({
        providers: {
          mock: { baseUrl: o.mockUrl, api: "anthropic-messages", apiKey: "sk-mock", models: [{ id: "mock-model" }] },
        },
      }),
    );
  const env: Record<string, string> = {
    HOME: join(o.root, "home"),
    PI_CODING_AGENT_DIR: agentDir,
    CLANKIE_PI_SOCKET_DIR: o.socketDir ?? join(o.agentStateDir, "pi", "sockets"),
    XDG_CONFIG_HOME: join(o.root, "config"),
    XDG_CACHE_HOME: join(o.root, "cache"),
    PATH: process.env.PATH ?? "",
    TERM: "xterm-256color",
  };
  if (o.workerTools) env.CLANKIE_AGENT_STATE_DIR = o.agentStateDir;
  const extensions = ["-e", dist("pi-extension.js"), ...(o.workerTools ? ["-e", dist("pi-worker-tools.js")] : [])];
  const tmuxSocket = join(o.root, "tmux.sock");
  // argv, no shell: every word is a fixed path or flag.
  execFileSync(TMUX, [
    "-S",
    tmuxSocket,
    "-f",
    "/dev/null",
    "new-session",
    "-d",
    "-s",
    "pi",
    "-x",
    "160",
    "-y",
    "40",
    "-c",
    join(o.root, "work"),
    "/usr/bin/env",
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    o.bin,
    ...extensions,
    ...(o.sessionDir ? ["--session-dir", o.sessionDir] : ["--no-session"]),
    ...(o.keyless ? ["--model", "anthropic/claude-sonnet-4-5"] : ["--provider", "mock", "--model", "mock-model"]),
  ]);
  return {
    tmuxSocket,
    close() {
      try {
        execFileSync(TMUX, ["-S", tmuxSocket, "kill-server"], { stdio: "ignore" });
      } catch {
        // already gone
      }
    },
  };
}
