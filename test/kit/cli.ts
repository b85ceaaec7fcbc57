/** Runs the compiled `clankie` CLI as a real process. `npm test` builds dist/ first. */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

export const CLI = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run 'npm run build' (npm test does it first)`);
}

export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  assertBuilt();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

export interface UpProcess {
  child: ChildProcess;
  ready: {
    mcpUrl: string;
    token: string;
    statusUrl: string;
    dashboardUrl: string;
    agentUrl: string;
    caFile?: string;
    bridge: { command: string; args: string[] };
  };
  /** The extra stdout lines after the ready line (there must be none). */
  extraStdout: string[];
  stderr: () => string;
  stop(): Promise<number | null>;
}

/** Starts `clankie up --json` and waits for its one ready line. */
export async function startUp(args: string[], env: NodeJS.ProcessEnv = {}): Promise<UpProcess> {
  assertBuilt();
  const child = spawn(process.execPath, [CLI, "up", "--json", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout! });
  const extraStdout: string[] = [];
  const ready = await new Promise<UpProcess["ready"]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`clankie up was not ready in 60 s; stderr:\n${stderr}`)), 60_000);
    let first = true;
    lines.on("line", (line) => {
      if (!first) return void extraStdout.push(line);
      first = false;
      clearTimeout(timer);
      try {
        resolve(JSON.parse(line));
      } catch {
        reject(new Error(`first stdout line is not JSON: ${line}`));
      }
    });
    child.once("exit", (code) => reject(new Error(`clankie up exited with ${code}; stderr:\n${stderr}`)));
  });
  return {
    child,
    ready,
    extraStdout,
    stderr: () => stderr,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once("exit", (code) => resolve(code));
        child.kill("SIGTERM");
      }),
  };
}

/** Child pids of a process, from /proc (Linux). */
export function childPids(pid: number): number[] {
  const path = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
}
