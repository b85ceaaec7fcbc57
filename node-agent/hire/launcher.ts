/**
 * One launcher per harness behind one interface: what runs in the new pane so the harness
 * starts in its working directory opted in to the native channel Clankie needs, and which
 * screens mean the owner must act (folder trust, a consent prompt). A launcher never types.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ProofProvider } from "../proofs/provider.js";
import type { HireHarness } from "./harnesses.js";
import type { RecordedCodexServer } from "./host-journal.js";
import type { CannotWork } from "../harnesses/adapter.js";

export interface LaunchRequest {
  hireId: string;
  workingDirectory: string;
  title: string;
  model?: string | undefined;
  effort?: string | undefined;
}

export interface LaunchContext {
  bin: string;
  /** A private folder for this hire's files (configs, passwords). */
  hireDir: string;
  claudeChannelDir: string;
  claudeReportDir: string;
  piSocketDir: string;
  /** Claude channel opt-in: the installed plugin, or the development server (tests, dev). */
  claudeChannel: "plugin" | "development";
  /** The agent's state directory, which the worker MCP server (`clankie worker mcp`) dials. */
  agentStateDir: string;
  /**
   * Whether the hire pre-approves the worker tools (message_clankie, message_clankie_status) in
   * the harness: "owner" (default) adds no approval, the owner's own harness config decides;
   * "approve" is the owner's explicit hire option (docs/hire-agent.md).
   */
  workerToolApproval: "owner" | "approve";
  env: Record<string, string>;
  /** Where the pane opens: Herdr's agent.start runs only the kind's own binary (launch-codex.ts). */
  paneHost?: "tmux" | "herdr" | undefined;
  /** Kernel facts, for a launcher that starts a process itself and must record its exact lifetime. */
  proofs?: ProofProvider | undefined;
}

export interface LaunchPlan {
  /** Runs in the pane, straight from execve (no shell sees it). */
  argv: string[];
  /** Added to the pane's environment (the hire marker is added by the caller). */
  env: Record<string, string>;
  /** Processes the launcher started outside the pane (they carry the hire marker too). */
  sidecars?: { pid: number; stop(): Promise<void> }[];
  /** A Codex app-server the launcher started outside the pane (Herdr), recorded in the host journal before the pane opens. */
  codexServer?: RecordedCodexServer | undefined;
}

/**
 * `definite`: the session can never become a seat (e.g. Claude refused the plugin channel), so the
 * hire answers at once and closes the pane it opened; otherwise the owner may still act in the pane.
 */
export type ScreenBlock = {
  kind: "trust_required" | "consent_required" | "channel_plugin_not_allowed" | "channel_plugin_not_installed";
  fix: string;
  definite?: true;
};

export interface HarnessLauncher {
  readonly harness: HireHarness;
  plan(req: LaunchRequest, ctx: LaunchContext): Promise<LaunchPlan>;
  /** What the pane's visible screen says the owner must decide, if anything. */
  screenBlock(screen: string, paneId: string): ScreenBlock | undefined;
  /** A fatal error the harness shows: it cannot take a turn (issue 35). Only read, never answered. */
  fatalScreen?(screen: string): CannotWork | undefined;
}

/** A file shipped in dist/: found beside this module when running from dist, else under ./dist. */
export function installedFile(relFromDist: string): string {
  const beside = fileURLToPath(new URL(`../../${relFromDist}`, import.meta.url));
  if (existsSync(beside)) return beside;
  return fileURLToPath(new URL(`../../dist/${relFromDist}`, import.meta.url));
}

export const CLI_PATH = () => installedFile("cli/main.js");

/** The worker MCP server's name in every harness config (its tools are then mcp__clankie__… / clankie_…). */
export const WORKER_SERVER_NAME = "clankie";

/** How a harness starts the worker MCP server: no token, the agent proves the caller's pane. */
export function workerMcpCommand(ctx: LaunchContext): { command: string; args: string[] } {
  return { command: process.execPath, args: [CLI_PATH(), "worker", "mcp", "--agent-state-dir", ctx.agentStateDir] };
}

/** The worker tools a hire pre-approves only under workerToolApproval "approve". */
export const WORKER_TOOLS = ["message_clankie", "message_clankie_status"] as const;
