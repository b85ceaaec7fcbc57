/**
 * Codex: a private app-server per hired seat, in the pane's own process tree, with the TUI
 * attached by `codex --remote unix://SOCK` (ADR 0040 addendum; the shape rule 38 asks for on
 * Windows, codex-windows.ts). The pane runs codex-pane-runner.js, which starts
 * `codex app-server --listen unix://SOCK -c …` and then the TUI; the agent steers, queues and
 * reads through that socket only (never the account daemon). The server carries the hire's
 * configuration as `-c` overrides, which on the pinned 0.169.0 a daemon-joined TUI cannot take
 * (any override made it run an embedded server): the worker MCP server (`clankie worker mcp`,
 * no token: the agent proves the caller), `model`, `model_reasoning_effort`, and
 * `features.default_mode_request_user_input` so the hired Codex is offered its question tool.
 *
 * Herdr's agent.start runs only the kind's own binary with arguments, so on Herdr the agent
 * starts the same server itself (codex-herdr-server.ts), waits for SOCK, and agent.start runs
 * only the TUI: `codex --remote unix://SOCK -C DIR`. The plan is one (codex-pane-plan.ts).
 */
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tuiArgv, type CodexPaneSpec } from "./pane-plan.js";
import { startCodexServer, stopCodexServer } from "./herdr-server.js";
import type { CannotWork } from "../adapter.js";
import {
  installedFile,
  WORKER_SERVER_NAME,
  WORKER_TOOLS,
  workerMcpCommand,
  type HarnessLauncher,
  type LaunchContext,
  type LaunchRequest,
  type LaunchPlan,
  type ScreenBlock,
} from "../../hire/launcher.js";

/** sun_path holds 108 bytes with its NUL. */
const MAX_SOCKET_PATH = 100;

/** A TOML basic string: JSON's escapes are TOML's, except DEL, which TOML wants escaped too. */
export function tomlString(s: string): string {
  return JSON.stringify(s).replace(/\x7f/g, "\\u007f");
}

/** The hire's `-c` overrides for its private app-server, in a fixed order. */
export function codexServerConfig(
  req: Pick<LaunchRequest, "model" | "effort">,
  ctx: Pick<LaunchContext, "workerToolApproval" | "agentStateDir">,
): string[] {
  const worker = workerMcpCommand(ctx as LaunchContext);
  const pairs = [
    `mcp_servers.${WORKER_SERVER_NAME}.command=${tomlString(worker.command)}`,
    `mcp_servers.${WORKER_SERVER_NAME}.args=[${worker.args.map(tomlString).join(", ")}]`,
  ];
  // Only the report tools, and only as the owner's explicit option (docs/hire-agent.md): peers are never pre-approved.
  if (ctx.workerToolApproval === "approve")
    for (const t of WORKER_TOOLS) pairs.push(`mcp_servers.${WORKER_SERVER_NAME}.tools.${t}.approval_mode="approve"`);
  if (req.model) pairs.push(`model=${tomlString(req.model)}`);
  if (req.effort) pairs.push(`model_reasoning_effort=${tomlString(req.effort)}`);
  pairs.push("features.default_mode_request_user_input=true");
  return pairs.flatMap((p) => ["-c", p]);
}

/** The private socket: in the hire's own folder, or a 0700 folder of this user's when that path is too long. */
export function privateSocketPath(hireDir: string, hireId: string): string {
  const own = join(hireDir, "codex.sock");
  if (Buffer.byteLength(own) <= MAX_SOCKET_PATH) return own;
  const dir = join(tmpdir(), `clankie-codex-${process.getuid?.() ?? "u"}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A shared temp folder: the socket goes only into a folder this user owns and nobody else can enter.
  const st = statSync(dir);
  if (!st.isDirectory() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o077) !== 0)
    throw new Error(`${dir} is not a private folder of this user; the Codex socket is not put there`);
  return join(
    dir,
    `${hireId
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, "")
      .slice(0, 36)}.sock`,
  );
}

export class CodexLauncher implements HarnessLauncher {
  readonly harness = "codex" as const;

  async plan(req: LaunchRequest, ctx: LaunchContext): Promise<LaunchPlan> {
    const spec: CodexPaneSpec = {
      bin: ctx.bin,
      socketPath: privateSocketPath(ctx.hireDir, req.hireId),
      serverArgs: codexServerConfig(req, ctx),
      tuiArgs: ["-C", req.workingDirectory],
      serverLog: join(ctx.hireDir, "codex-app-server.log"),
    };
    if (ctx.paneHost === "herdr") {
      const proofs = ctx.proofs;
      if (!proofs)
        throw new Error(
          "the agent has no process facts to record the hire's Codex app-server with; nothing was started",
        );
      const server = await startCodexServer({
        spec,
        hireId: req.hireId,
        cwd: req.workingDirectory,
        env: ctx.env,
        proofs,
      });
      const stop = async () => void (await stopCodexServer(proofs, server));
      return { argv: [ctx.bin, ...tuiArgv(spec)], env: {}, codexServer: server, sidecars: [{ pid: server.pid, stop }] };
    }
    const specFile = join(ctx.hireDir, "codex-pane.json");
    writeFileSync(specFile, JSON.stringify(spec), { mode: 0o600 });
    return { argv: [process.execPath, installedFile("node-agent/harnesses/codex/pane-runner.js"), specFile], env: {} };
  }

  screenBlock(screen: string, paneId: string): ScreenBlock | undefined {
    if (/trust (the contents of )?this (folder|directory)|Do you trust/i.test(screen)) {
      return {
        kind: "trust_required",
        fix: `Codex asks whether to trust the folder in pane ${paneId}: that is the owner's decision. Answer it there (or mark the project trusted in config.toml), then message the seat.`,
      };
    }
    return undefined;
  }

  /** Codex's own words when the turn cannot reach its model (0.169.0 retries them without end). */
  fatalScreen(screen: string): CannotWork | undefined {
    const m = /Reconnecting\.\.\. waiting for network[^\n]*/.exec(screen);
    return m ? { reason: "model_unreachable", detail: `Codex shows "${m[0].trim()}"` } : undefined;
  }
}
