/**
 * `clankie controller` as a real child process (dist/ build), on a seeded PGlite or on a
 * given PostgreSQL URL: for measuring its own memory (RSS from /proc) and for running two
 * replicas on one PostgreSQL.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { CLI, assertBuilt } from "./cli.js";
import { readToken } from "../../controller/state-dir.js";

export interface ControllerProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  mcpUrl: string;
  /** The mutual-TLS agent port (ADR 0021). */
  agentUrl: string;
  stateDir: string;
  ownerToken: string;
  leadToken: string;
  /** Resident set size in bytes, from /proc/PID/status. */
  rssBytes(): number;
  stderr(): string;
  stop(): Promise<void>;
}

export interface ControllerProcessOptions {
  /**
   * Runs it in its own PID namespace on this host (`unshare --pid`, as root), as a container that
   * keeps the host's name would: its pid there (50000, above this host's pid_max) names no process
   * here. `pid` is then unshare's, and a stop kills the namespace.
   */
  pidNamespace?: boolean;
  extraArgs?: string[];
}

export async function startControllerProcess(
  stateDir: string,
  databaseUrl?: string,
  env: NodeJS.ProcessEnv = {},
  opts: ControllerProcessOptions = {},
): Promise<ControllerProcess> {
  assertBuilt();
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.DATABASE_URL;
  const args = [
    CLI,
    "controller",
    "--json",
    "--state-dir",
    stateDir,
    "--port",
    "0",
    "--log-level",
    "warn",
    ...(opts.extraArgs ?? []),
  ];
  if (databaseUrl) args.push("--database-url", databaseUrl);
  // In the namespace the shell is pid 1 and forks the controller as its next pid, 50000; not exec'd.
  const inNamespace = [
    "--pid",
    "--fork",
    "--mount-proc",
    "--kill-child",
    "sh",
    "-c",
    'echo 49999 > /proc/sys/kernel/ns_last_pid && "$@"; exit $?',
    "sh",
    process.execPath,
  ];
  const child = opts.pidNamespace
    ? spawn("unshare", [...inNamespace, ...args], { env: childEnv, stdio: ["ignore", "pipe", "pipe"] })
    : spawn(process.execPath, args, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const ready = await new Promise<{ url: string; mcpUrl: string; agentUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`controller not ready in 60 s; stderr:\n${stderr}`)), 60_000);
    createInterface({ input: child.stdout! }).once("line", (line) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`not JSON: ${line}`));
      }
    });
    child.once("exit", (code) => reject(new Error(`controller exited with ${code}; stderr:\n${stderr}`)));
  });
  return {
    child,
    pid: child.pid!,
    url: ready.url,
    mcpUrl: ready.mcpUrl,
    agentUrl: ready.agentUrl,
    stateDir,
    ownerToken: readToken(stateDir, "owner")!,
    leadToken: readToken(stateDir, "lead")!,
    rssBytes: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) * 1024,
    stderr: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
        child.once("exit", () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}
