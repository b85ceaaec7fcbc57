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

export async function startControllerProcess(stateDir: string, databaseUrl?: string, env: NodeJS.ProcessEnv = {}): Promise<ControllerProcess> {
  assertBuilt();
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.DATABASE_URL;
  const args = [CLI, "controller", "--json", "--state-dir", stateDir, "--port", "0", "--log-level", "warn"];
  if (databaseUrl) args.push("--database-url", databaseUrl);
  const child = spawn(process.execPath, args, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
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
