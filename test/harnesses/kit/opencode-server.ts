/**
 * Runs the real `opencode serve` on loopback with every home directory under a temp dir and
 * a provider pointing at the mock Anthropic server; creates sessions through the v2 API.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SeatOf } from "../../../node-agent/harnesses/adapter.js";
import { SeatKind } from "../../../shared/verdicts.js";

export interface OpenCodeServer {
  readonly url: string;
  readonly password: string;
  readonly passwordFile: string;
  readonly dir: string;
  readonly pid: number;
  createSession(): Promise<string>;
  close(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `config`: extra opencode.json keys (a permission rule, say), merged over the defaults. */
export async function startOpenCodeServer(
  bin: string,
  mockUrl: string,
  config: Record<string, unknown> = {},
): Promise<OpenCodeServer> {
  const dir = mkdtempSync(join(tmpdir(), "clankie-opencode-"));
  const dirs = {
    HOME: "home",
    XDG_CONFIG_HOME: "config",
    XDG_DATA_HOME: "data",
    XDG_STATE_HOME: "state",
    XDG_CACHE_HOME: "cache",
  };
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const [k, sub] of Object.entries(dirs)) {
    mkdirSync(join(dir, sub), { recursive: true });
    env[k] = join(dir, sub);
  }
  mkdirSync(join(dir, "config/opencode"), { recursive: true });
  mkdirSync(join(dir, "work"), { recursive: true });
  writeFileSync(
    join(dir, "config/opencode/opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      model: "mock/mock-model",
      small_model: "mock/mock-model",
      autoupdate: false,
      share: "disabled",
      provider: {
        mock: {
          npm: "@ai-sdk/anthropic",
          name: "Mock",
          options: { baseURL: `${mockUrl}/v1`, apiKey: "sk-mock" },
          models: { "mock-model": { name: "Mock" } },
        },
      },
      ...config,
    }),
  );
  const password = `pw-${process.pid}-${Date.now()}`;
  const passwordFile = join(dir, "password");
  writeFileSync(passwordFile, password, { mode: 0o600 });
  env.OPENCODE_SERVER_PASSWORD = password;
  const port = await freePort();
  const child: ChildProcess = spawn(bin, ["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
    cwd: join(dir, "work"),
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`opencode serve did not start: ${log}`)), 60_000);
    const onData = (c: Buffer) => {
      log += c.toString();
      if (log.includes("listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`opencode serve exited ${code}: ${log}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const auth = `Basic ${Buffer.from(`opencode:${password}`).toString("base64")}`;
  const created: string[] = [];
  const api = { url, password, passwordFile, dir, pid: child.pid! };
  const handle: OpenCodeServer = {
    ...api,
    async createSession() {
      const res = await fetch(`${url}/api/session`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({
          model: { id: "mock-model", providerID: "mock" },
          location: { directory: join(dir, "work") },
        }),
      });
      const body = (await res.json()) as { data?: { id?: string } };
      if (!body.data?.id) throw new Error(`session create failed: ${JSON.stringify(body)}`);
      created.push(body.data.id);
      return body.data.id;
    },
    async close() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            child.kill("SIGKILL");
            resolve();
          }, 5000);
          child.once("exit", () => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Observed on 1.18.33: the very first prompt a fresh server admits is prompted but never
  // reaches the model; every later session works. Spend that first prompt on a throwaway.
  const first = await handle.createSession();
  const headers = { authorization: auth, "content-type": "application/json" };
  await fetch(`${url}/api/session/${first}/prompt`, {
    method: "POST",
    headers,
    body: JSON.stringify({ prompt: { text: "warm-up" }, delivery: "queue" }),
  });
  await fetch(`${url}/api/session/${first}/interrupt`, { method: "POST", headers });
  return handle;
}

/** A seat for one session of this server, as discovery records it; VIA: another address or password file for it. */
export function openCodeSeat(
  server: OpenCodeServer,
  sessionId: string,
  via: { baseUrl?: string | undefined; passwordFile?: string | undefined } = {},
): SeatOf<"opencode"> {
  return {
    name: `oc-${sessionId.slice(-6)}`,
    kind: SeatKind.OpenCode,
    title: "opencode",
    occupantId: `opencode:${sessionId}`,
    createdAtMs: Date.now(),
    control: {
      baseUrl: via.baseUrl ?? server.url,
      sessionId,
      passwordFile: via.passwordFile ?? server.passwordFile,
    },
  };
}
