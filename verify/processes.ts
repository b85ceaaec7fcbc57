/**
 * The system under test as real processes of the built CLI: `clankie controller` on a fixed
 * port (so leads find it again after a kill) and `clankie agent` on a fixed port (so the
 * partition nemesis can cut exactly its link). Each can be SIGKILLed, restarted, paused.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLI = fileURLToPath(new URL("../cli/main.js", import.meta.url));

export interface Managed {
  readonly name: string;
  running(): boolean;
  /** The live process's id (the HA run maps it to the replica's controller_instances row). */
  pid(): number | undefined;
  start(): Promise<void>;
  kill(): Promise<void>;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export function managed(
  name: string,
  args: () => string[],
  readyLine: RegExp,
  logFile: string,
  env: () => NodeJS.ProcessEnv = () => ({}),
  onReady: () => void = () => {},
): Managed {
  let child: ChildProcess | undefined;
  const alive = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    name,
    running: alive,
    pid: () => (alive() ? child!.pid : undefined),
    async start() {
      const c = spawn(process.execPath, [CLI, ...args()], {
        env: { ...process.env, ...env() },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = c;
      let out = "";
      c.stderr!.on("data", (d: Buffer) => writeFileSync(logFile, d, { flag: "a" }));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} not ready in 60 s`)), 60_000);
        c.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          if (readyLine.test(out)) {
            clearTimeout(timer);
            onReady();
            resolve();
          }
        });
        c.once("exit", (code, sig) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited (${code ?? sig}) before it was ready; see ${logFile}`));
        });
      });
    },
    async kill() {
      const c = child;
      if (!c || !alive()) return;
      await new Promise<void>((resolve) => {
        c.once("exit", () => resolve());
        c.kill("SIGKILL");
      });
    },
    pause: () => void (alive() && child!.kill("SIGSTOP")),
    resume: () => void (alive() && child!.kill("SIGCONT")),
    async stop() {
      const c = child;
      if (!c || !alive()) return;
      c.kill("SIGCONT");
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => c.kill("SIGKILL"), 10_000);
        c.once("exit", () => {
          clearTimeout(t);
          resolve();
        });
        c.kill("SIGTERM");
      });
    },
  };
}

/**
 * The agent port listens on 127.0.0.1 but is advertised (in join tokens, the server certificate
 * and the replica list the agent's reverse link follows) as `advertiseHost`, where the partition
 * relay listens on the same port: every connection of the agent link goes through the relay.
 */
export function controllerProcess(
  stateDir: string,
  port: number,
  agentPort: number,
  advertiseHost: string,
  databaseUrl: string,
  logDir: string,
): Managed {
  mkdirSync(stateDir, { recursive: true });
  return managed(
    "controller",
    () => [
      "controller",
      "--json",
      "--state-dir",
      stateDir,
      "--port",
      String(port),
      "--agent-host",
      "127.0.0.1",
      "--agent-port",
      String(agentPort),
      "--agent-advertise",
      advertiseHost,
      "--database-url",
      databaseUrl,
      "--deliver-timeout-ms",
      "3000",
      "--log-level",
      "warn",
    ],
    /\n/,
    join(logDir, "controller.log"),
  );
}

/**
 * The agent joins once with `joinToken` (from the environment, never argv, ADR 0020); restarts reuse
 * its certificate and get no token (a used token given again is refused, and the agent would not start).
 */
/** With `tmuxSocket`, harness seats are discovered (and hired) in that private tmux server; `env` reaches the harnesses it launches. */
export function agentProcess(
  stateDir: string,
  agentUrl: string,
  joinToken: string,
  logDir: string,
  panes?: { tmuxSocket: string; env: NodeJS.ProcessEnv },
  machine = "vbox",
): Managed {
  mkdirSync(stateDir, { recursive: true });
  const paneArgs = panes ? ["--pane-host", "tmux", "--tmux-socket", panes.tmuxSocket] : [];
  let joined = false;
  return managed(
    machine === "vbox" ? "agent" : `agent ${machine}`,
    () => [
      "agent",
      "--json",
      "--state-dir",
      stateDir,
      "--controller",
      agentUrl,
      "--machine",
      machine,
      ...paneArgs,
      "--log-level",
      "warn",
    ],
    /\n/,
    join(logDir, machine === "vbox" ? "agent.log" : `agent-${machine}.log`),
    () => ({ ...panes?.env, ...(joined ? {} : { CLANKIE_JOIN_TOKEN: joinToken }) }),
    () => (joined = true),
  );
}

export function token(stateDir: string, name: "owner" | "lead"): string {
  return readFileSync(join(stateDir, `${name}.token`), "utf8").trim();
}
