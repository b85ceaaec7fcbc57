/**
 * A node agent as a real child process (the compiled CLI), so tests can freeze it
 * (SIGSTOP), thaw it, kill it and start it again on the same state directory.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { CLI, assertBuilt } from "./cli.js";

export interface AgentProcess {
  readonly pid: number;
  freeze(): void;
  thaw(): void;
  /** SIGKILL: whatever it had not processed is lost, as in a crash. */
  kill(): Promise<void>;
  /** A fresh process on the same state dir; resolves once it printed its endpoint. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** The first launch joins with `joinToken` (from the environment, never argv); restarts use the stored identity. */
export async function startAgentProcess(opts: {
  controllerUrl: string;
  stateDir: string;
  machine: string;
  joinToken: string;
  extraArgs?: string[];
}): Promise<AgentProcess> {
  assertBuilt();
  let child: ChildProcess;
  let joinToken: string | undefined = opts.joinToken;
  const launch = async () => {
    const env = { ...process.env, ...(joinToken ? { CLANKIE_JOIN_TOKEN: joinToken } : {}) };
    joinToken = undefined;
    child = spawn(
      process.execPath,
      [
        CLI,
        "agent",
        "--json",
        "--controller",
        opts.controllerUrl,
        "--state-dir",
        join(opts.stateDir, "agent"),
        "--machine",
        opts.machine,
        "--log-level",
        "error",
        ...(opts.extraArgs ?? []),
      ],
      { stdio: ["ignore", "pipe", "inherit"], env },
    );
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once("line", () => resolve());
      child.once("exit", (code) => reject(new Error(`agent exited with ${code}`)));
    });
  };
  const exited = () =>
    new Promise<void>((r) =>
      child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", () => r()),
    );
  await launch();
  const kill = async () => {
    const done = exited();
    process.kill(child.pid!, "SIGKILL");
    await done;
  };
  return {
    get pid() {
      return child.pid!;
    },
    freeze: () => process.kill(child.pid!, "SIGSTOP"),
    thaw: () => process.kill(child.pid!, "SIGCONT"),
    kill,
    async restart() {
      if (child.exitCode === null && child.signalCode === null) await kill();
      await launch();
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = exited();
      process.kill(child.pid!, "SIGCONT");
      child.kill("SIGTERM");
      await done;
    },
  };
}
