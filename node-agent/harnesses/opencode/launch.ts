/**
 * OpenCode: a TUI is a seat only when its argv names a loopback server and its exact
 * session. The hire runs the TUI with its own server in the pane (`opencode --port P
 * --hostname 127.0.0.1 --session S`, basic auth, the password in a private file by port that
 * the adapter reads), so everything the server starts, the worker MCP server
 * (`clankie worker mcp`, given through OPENCODE_CONFIG_CONTENT) included, runs in the pane's
 * process tree, where the worker endpoint's kernel proof places it (ADR 0040 addendum).
 * The session must exist before the TUI names it: a short-lived `opencode serve` on another
 * loopback port (same password, same hire marker) creates it in the working directory and is
 * stopped before the pane opens, so no process outlives the plan outside the pane.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { HIRE_ENV } from "../../hire/pane-opener.js";
import {
  WORKER_SERVER_NAME,
  WORKER_TOOLS,
  workerMcpCommand,
  type HarnessLauncher,
  type LaunchContext,
  type LaunchRequest,
  type LaunchPlan,
  type ScreenBlock,
} from "../../hire/launcher.js";

const SERVE_WAIT_MS = 30_000;
const STOP_WAIT_MS = 5_000;

/** Where the agent keeps the password of each hired OpenCode server, by port (read by discovery). */
export function openCodePasswordFile(passwordDir: string, port: number | string): string {
  return join(passwordDir, `${port}.password`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The OpenCode config the hire adds: the worker server as a local MCP server, merged into an
 * OPENCODE_CONFIG_CONTENT the owner's hire environment may already carry. No token: the agent
 * proves the caller. Tool permissions stay the owner's (OpenCode's own config decides) unless
 * the owner chose workerToolApproval "approve": then exactly the report tools are allowed
 * (never the peer tools), beside the owner's own rules; an owner's single action for every
 * tool (a string) is left as it is.
 */
export function openCodeConfigContent(ctx: LaunchContext): string {
  let owner: Record<string, unknown> = {};
  try {
    const parsed: unknown = ctx.env.OPENCODE_CONFIG_CONTENT ? JSON.parse(ctx.env.OPENCODE_CONFIG_CONTENT) : {};
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) owner = parsed as Record<string, unknown>;
  } catch {
    // not JSON: OpenCode would refuse it too; ours replaces it
  }
  const { command, args } = workerMcpCommand(ctx);
  const mcp = {
    ...((owner.mcp as Record<string, unknown> | undefined) ?? {}),
    [WORKER_SERVER_NAME]: { type: "local", command: [command, ...args], enabled: true },
  };
  const config: Record<string, unknown> = { ...owner, mcp };
  const rules = owner.permission;
  if (
    ctx.workerToolApproval === "approve" &&
    (rules === undefined || (typeof rules === "object" && rules !== null && !Array.isArray(rules)))
  ) {
    config.permission = {
      ...(rules as Record<string, unknown> | undefined),
      ...Object.fromEntries(WORKER_TOOLS.map((t) => [`${WORKER_SERVER_NAME}_${t}`, "allow"])),
    };
  }
  return JSON.stringify(config);
}

/** Creates the hire's session with a short-lived server, then stops that server. */
async function createSession(req: LaunchRequest, ctx: LaunchContext, password: string): Promise<string> {
  const port = await freePort();
  const env = { ...process.env, ...ctx.env, OPENCODE_SERVER_PASSWORD: password, [HIRE_ENV]: req.hireId };
  const child = spawn(ctx.bin, ["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
    cwd: req.workingDirectory,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    let log = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`opencode serve did not listen within ${SERVE_WAIT_MS / 1000} s: ${log.slice(-400)}`)),
        SERVE_WAIT_MS,
      );
      const onData = (c: Buffer) => {
        log += c.toString();
        if (log.includes("listening on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`opencode serve exited ${code}: ${log.slice(-400)}`));
      });
    });
    const headers = {
      authorization: `Basic ${Buffer.from(`opencode:${password}`).toString("base64")}`,
      "content-type": "application/json",
    };
    const body: Record<string, unknown> = { location: { directory: req.workingDirectory } };
    if (req.model?.includes("/"))
      body.model = { providerID: req.model.split("/")[0], id: req.model.split("/").slice(1).join("/") };
    const res = await fetch(`http://127.0.0.1:${port}/api/session`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(SERVE_WAIT_MS),
    });
    const created = (await res.json().catch(() => ({}))) as { data?: { id?: string } };
    const sessionId = created.data?.id;
    if (!sessionId || !/^ses[A-Za-z0-9_]+$/.test(sessionId))
      throw new Error(`opencode serve created no session: HTTP ${res.status}`);
    return sessionId;
  } finally {
    // Stopped and reaped before the pane opens: the TUI's own server is the seat's only one.
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), STOP_WAIT_MS);
      await exited;
      clearTimeout(killer);
    }
  }
}

export class OpenCodeLauncher implements HarnessLauncher {
  readonly harness = "opencode" as const;

  constructor(private readonly passwordDir?: string) {}

  async plan(req: LaunchRequest, ctx: LaunchContext): Promise<LaunchPlan> {
    const passwordDir = this.passwordDir ?? join(ctx.hireDir, "..", "..", "opencode", "passwords");
    mkdirSync(passwordDir, { recursive: true, mode: 0o700 });
    const password = randomBytes(24).toString("base64url");
    const sessionId = await createSession(req, ctx, password);
    const port = await freePort();
    writeFileSync(openCodePasswordFile(passwordDir, port), password, { mode: 0o600 });
    return {
      argv: [
        ctx.bin,
        "--port",
        String(port),
        "--hostname",
        "127.0.0.1",
        "--session",
        sessionId,
        ...(req.model?.includes("/") ? ["--model", req.model] : []),
      ],
      env: { OPENCODE_SERVER_PASSWORD: password, OPENCODE_CONFIG_CONTENT: openCodeConfigContent(ctx) },
    };
  }

  screenBlock(): ScreenBlock | undefined {
    return undefined;
  }
}
