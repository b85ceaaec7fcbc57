/**
 * The Claude, OpenCode and Pi adapters as the agent runs them: Claude's channel sockets and
 * session reports live under the agent's state dir (the worker's `clankie worker
 * claude-channel --channel-dir` and hook `--report-dir` must name the same folders), and
 * Claude's busy/idle comes from the pane host when it has a view.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { MonotonicClock } from "../proofs/proof.js";
import type { ProofProvider } from "../proofs/provider.js";
import type { PaneHost } from "../panes/pane-host.js";
import type { HarnessAdapter, SeatRecord } from "./adapter.js";
import { createGuardedEscStop } from "./claude/stop.js";
import { tmuxClaudeKeys } from "./claude/stop-tmux.js";
import { herdrClaudeKeys } from "./claude/stop-herdr.js";
import { HerdrPaneHost } from "../panes/herdr.js";
import { ClaudeAdapter } from "./claude/adapter.js";
import { createClaudeDiscover } from "./claude/discover.js";
import { OpenCodeAdapter } from "./opencode/adapter.js";
import { PiAdapter } from "./pi/adapter.js";
import { PiLinkBook } from "./pi/links.js";
import { createPiDiscover, dialPiExtension } from "./pi/extension-link.js";
import { withHiredOpenCodePassword } from "./opencode/password.js";

export interface NativeAdapters {
  adapters: HarnessAdapter[];
  piLinks: PiLinkBook;
  claudeChannelDir: string;
  claudeReportDir: string;
  piSocketDir: string;
  /** Passwords of the OpenCode servers hires started, by port (hire/launch-opencode.ts). */
  openCodePasswordDir: string;
  close(): Promise<void>;
}

export interface NativeAdapterOptions {
  clock: MonotonicClock;
  stateDir: string;
  paneHost?: PaneHost | undefined;
  /** The tmux server the pane host reads, when it is tmux: Claude's guarded Esc needs its key input. */
  tmuxServer?: { socketPath?: string | undefined } | undefined;
  /** The seat binding, checked again just before the Esc: the seat book still holds this occupant. */
  stillOccupied?: (seat: SeatRecord) => boolean;
  /** This machine's proof provider, shared with the other adapters. */
  proofs?: ProofProvider | undefined;
}

export function createNativeAdapters(o: NativeAdapterOptions): NativeAdapters {
  const claudeChannelDir = join(o.stateDir, "claude", "channels");
  const claudeReportDir = join(o.stateDir, "claude", "sessions");
  mkdirSync(claudeChannelDir, { recursive: true, mode: 0o700 });
  mkdirSync(claudeReportDir, { recursive: true, mode: 0o700 });
  const piSocketDir = join(o.stateDir, "pi", "sockets");
  mkdirSync(piSocketDir, { recursive: true, mode: 0o700 });
  const paneHost = o.paneHost;
  const paneKeys =
    paneHost instanceof HerdrPaneHost ? herdrClaudeKeys(paneHost) : paneHost?.kind === "tmux" && o.tmuxServer ? tmuxClaudeKeys(o.tmuxServer) : undefined;
  const claude = new ClaudeAdapter({
    clock: o.clock,
    paneStatus: paneHost
      ? async (seat) => (seat.pane ? (await paneHost.listPanes()).find((p) => p.paneId === seat.pane!.paneId)?.agentStatus : undefined)
      : undefined,
    proofs: o.proofs,
    discover: createClaudeDiscover(claudeChannelDir, claudeReportDir, o.proofs),
    // Stop is the one guarded Esc, offered only where the pane host has key input (Herdr, tmux).
    stopper: paneKeys ? createGuardedEscStop({ keys: paneKeys, recheckAuthority: async (seat) => o.stillOccupied?.(seat) ?? false }) : undefined,
  });
  const piLinks = new PiLinkBook((c) => dialPiExtension(c));
  const pi = new PiAdapter({ clock: o.clock, links: piLinks, paneHost });
  // A Pi TUI runs the Clankie extension with CLANKIE_PI_SOCKET_DIR set to this folder.
  pi.discover = createPiDiscover(piSocketDir);
  const openCodePasswordDir = join(o.stateDir, "opencode", "passwords");
  const opencode = new OpenCodeAdapter({ clock: o.clock });
  opencode.discover = withHiredOpenCodePassword(opencode.discover, openCodePasswordDir);
  return {
    adapters: [claude, opencode, pi],
    openCodePasswordDir,
    piLinks,
    claudeChannelDir,
    claudeReportDir,
    piSocketDir,
    close: () => piLinks.close(),
  };
}
