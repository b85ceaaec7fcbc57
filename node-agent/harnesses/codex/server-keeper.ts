/**
 * Keeps each agent-started Codex app-server (Herdr hires, codex-herdr-server.ts) exactly as
 * long as its hire's TUI: once the hire has finished, the server is stopped when the Herdr pane
 * is gone or no longer runs the TUI on that server's socket (the seat disappeared, or the hire
 * failed and closed its pane). A restarted agent adopts every recorded server from the host
 * journal (never from a worker's word) and applies the same rule. Uncertainty (Herdr
 * unreachable) keeps the server: a live seat must not lose its backend to a missed read.
 */
import type { Logger } from "../../../shared/logger.js";
import type { ProofProvider } from "../../proofs/provider.js";
import { isRecordedAlive, stopCodexServer } from "./herdr-server.js";
import type { HostJournal } from "../../hire/host-journal.js";

/** What the pane host says of the pane's TUI on `remote` (`unix://SOCK`). */
export type TuiState = "running" | "gone" | "unknown";

export interface TuiProbe {
  tuiState(paneId: string, remote: string): Promise<TuiState>;
}

export class CodexServerKeeper {
  private readonly watched = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly d: {
      journal: HostJournal;
      proofs: ProofProvider;
      panes: TuiProbe;
      logger: Logger;
      everyMs?: number;
    },
  ) {}

  /** Adopts the journal's servers not yet seen stopped, then checks them periodically. */
  start(): void {
    for (const r of this.d.journal.all())
      if (r.codexServer && r.codexServer.stoppedAtMs === undefined) this.watched.add(r.hireId);
    this.timer = setInterval(() => void this.tick(), this.d.everyMs ?? 2000);
    this.timer.unref();
  }

  watch(hireId: string): void {
    this.watched.add(hireId);
  }

  watching(): string[] {
    return [...this.watched];
  }

  /** One pass (serialised): what each watched server's hire still justifies. */
  tick(): Promise<void> {
    this.ticking ??= this.pass().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async pass(): Promise<void> {
    for (const hireId of [...this.watched]) {
      try {
        await this.check(hireId);
      } catch (e) {
        this.d.logger.warn("codex server check failed", { hireId, error: (e as Error).message });
      }
    }
  }

  private async check(hireId: string): Promise<void> {
    const rec = this.d.journal.read(hireId);
    const server = rec?.codexServer;
    if (!rec || !server || server.stoppedAtMs !== undefined) return void this.watched.delete(hireId);
    const mark = (why: string) => {
      this.d.journal.write({ ...rec, codexServer: { ...server, stoppedAtMs: Date.now() } });
      this.watched.delete(hireId);
      this.d.logger.info("hire's codex app-server ended", { hireId, pid: server.pid, why });
    };
    if (!(await isRecordedAlive(this.d.proofs, server))) return mark("gone");
    const closed = rec.answer?.paneClosed === true || (rec.state === "finished" && !rec.paneId);
    const state = closed
      ? "gone"
      : rec.paneId
        ? await this.d.panes.tuiState(rec.paneId, `unix://${server.socketPath}`)
        : "unknown";
    if (state !== "gone") return;
    if (await stopCodexServer(this.d.proofs, server))
      mark(closed ? "the hire's pane was closed" : "the pane's TUI is gone");
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
