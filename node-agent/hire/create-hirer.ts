/** Builds the agent's Hirer from its configuration: the pane opener for its pane host and the launchers of the registered harnesses. */
import type { Logger } from "../../shared/logger.js";
import type { AgentConfig } from "../config.js";
import type { AdapterRegistry } from "../harnesses/registry.js";
import type { NativeAdapters } from "../harnesses/native-adapters.js";
import type { MonotonicClock } from "../proofs/proof.js";
import type { ProofProvider } from "../proofs/provider.js";
import type { SeatBook } from "../seats/seat-book.js";
import type { SeatLocks } from "../seats/seat-locks.js";
import { HerdrPaneOpener } from "./herdr-opener.js";
import { TmuxPaneOpener } from "./tmux-opener.js";
import { HostJournal } from "./host-journal.js";
import { Hirer } from "./hire.js";
import type { PaneOpener } from "./pane-opener.js";
import { CodexServerKeeper } from "../harnesses/codex/server-keeper.js";

export function createHirer(o: {
  config: AgentConfig;
  seats: SeatBook;
  adapters: AdapterRegistry;
  clock: MonotonicClock;
  proofs: ProofProvider;
  locks: SeatLocks;
  native: NativeAdapters;
  scanNow: () => Promise<unknown>;
  logger: Logger;
}): Hirer {
  const ph = o.config.paneHost;
  const herdr = ph.kind === "herdr" ? new HerdrPaneOpener(ph.socketPath) : undefined;
  const opener: PaneOpener | undefined = ph.kind === "tmux" ? new TmuxPaneOpener({ socketPath: ph.socketPath }) : herdr;
  const journal = new HostJournal(o.config.stateDir);
  // Herdr hires' Codex app-servers run outside their panes: the agent keeps them as long as their TUIs.
  const servers = herdr
    ? new CodexServerKeeper({ journal, proofs: o.proofs, panes: herdr, logger: o.logger })
    : undefined;
  servers?.start();
  return new Hirer({
    seats: o.seats,
    adapters: o.adapters,
    clock: o.clock,
    journal,
    servers,
    proofs: o.proofs,
    opener,
    launchers: o.native.launchers,
    locks: o.locks,
    scanNow: o.scanNow,
    stateDir: o.config.stateDir,
    claudeChannelDir: o.native.folders.claudeChannelDir,
    claudeReportDir: o.native.folders.claudeReportDir,
    piSocketDir: o.native.folders.piSocketDir,
    options: o.config.hire,
    logger: o.logger,
  });
}
