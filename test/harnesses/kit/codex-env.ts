/**
 * An isolated Codex environment for real-binary tests: a temp HOME and CODEX_HOME whose
 * config.toml points Codex at the local mock Responses server, a trusted work folder (so the
 * TUI does not ask "Trust this folder?"), a dedicated `codex app-server` on a unix socket,
 * and cleanup that stops the shared daemon and kills every process the test started.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allPids, readEnviron } from "../../../node-agent/proofs/linux-read.js";

export interface CodexEnv {
  root: string;
  home: string;
  codexHome: string;
  workDir: string;
  env: NodeJS.ProcessEnv;
}

export function makeCodexEnv(bin: string, mockBaseUrl: string): CodexEnv {
  void bin;
  // Short paths: unix socket paths must stay under 108 bytes.
  const root = mkdtempSync(join(tmpdir(), "cx-"));
  const home = join(root, "h");
  const codexHome = join(root, "c");
  const workDir = join(root, "w");
  for (const d of [home, codexHome, workDir]) mkdirSync(d, { recursive: true });
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      'model = "mock-model"',
      'model_provider = "mock"',
      'approval_policy = "never"',
      'sandbox_mode = "read-only"',
      "",
      "[model_providers.mock]",
      'name = "Local mock"',
      `base_url = "${mockBaseUrl}"`,
      'wire_api = "responses"',
      'env_key = "MOCK_API_KEY"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "stream_idle_timeout_ms = 60000",
      "",
      `[projects."${workDir}"]`,
      'trust_level = "trusted"',
      "",
    ].join("\n"),
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    CODEX_HOME: codexHome,
    MOCK_API_KEY: "mock-key",
    TERM: "xterm-256color",
    LANG: "C.UTF-8",
    // A marker so cleanup can find every process this environment started, daemons included.
    CLANKIE_TEST_CODEX_ROOT: root,
  };
  return { root, home, codexHome, workDir, env };
}

/** A dedicated `codex app-server --listen unix://SOCK`, resolved once the socket exists. */
export async function startAppServer(bin: string, cx: CodexEnv, socketPath: string): Promise<ChildProcess> {
  const child = spawn(bin, ["app-server", "--listen", `unix://${socketPath}`], {
    env: cx.env,
    cwd: cx.workDir,
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += String(d)));
  for (let i = 0; i < 300 && !existsSync(socketPath); i++) {
    if (child.exitCode !== null) throw new Error(`codex app-server exited: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!existsSync(socketPath)) throw new Error(`codex app-server never made ${socketPath}: ${stderr}`);
  return child;
}

/** Stops the shared daemon of this CODEX_HOME, then kills anything still carrying the env marker. */
export function cleanupCodexEnv(bin: string, cx: CodexEnv): void {
  try {
    execFileSync(bin, ["app-server", "daemon", "stop"], { env: cx.env, timeout: 15_000, stdio: "ignore" });
  } catch {
    // no daemon was running
  }
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const env = readEnviron(pid);
    if (env instanceof Map && env.get("CLANKIE_TEST_CODEX_ROOT") === cx.root) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  rmSync(cx.root, { recursive: true, force: true });
}
