/**
 * Herdr as the hire's pane host: `pane.split` opens a pane in the working directory,
 * `pane.report_metadata` tags it with the hire id, and `agent.start` launches the harness
 * in it (Herdr's own launch, 30 s readiness). `pane.close` closes it after a definite
 * launch failure. Screens come from `pane.read`; nothing is typed.
 */
import { HerdrConnection } from "../panes/herdr-client.js";
import type { OpenOutcome, PaneLiveness, PaneOpener } from "./pane-opener.js";
import type { TuiProbe, TuiState } from "../harnesses/codex/server-keeper.js";

const TOKEN = "clankie_hire";
/** Herdr's agent.start takes 3001..300000 ms; the hire's readiness budget. */
const START_TIMEOUT_MS = 30_000;

export class HerdrPaneOpener implements PaneOpener, TuiProbe {
  readonly kind = "herdr" as const;

  constructor(private readonly socketPath: string) {}

  private async conn(): Promise<HerdrConnection | string> {
    const c = await HerdrConnection.open(this.socketPath, 5000);
    return c.ok ? c.connection : c.message;
  }

  async open(o: {
    hireId: string;
    title: string;
    cwd: string;
    argv: string[];
    env: Record<string, string>;
    harness: string;
  }): Promise<OpenOutcome> {
    const c = await this.conn();
    if (typeof c === "string")
      return {
        ok: false,
        reason: "herdr_unreachable",
        detail: `Herdr's socket ${this.socketPath} could not be reached (${c}); nothing was launched`,
        controlFix: "start Herdr (or point the agent's --herdr-socket at it), then hire again with a fresh intent",
      };
    try {
      const split = await c.call<{ pane?: { pane_id?: string; workspace_id?: string } }>("pane.split", {
        direction: "right",
        cwd: o.cwd,
        focus: false,
      });
      if (!split.ok) {
        const unreachable = split.kind !== "error";
        return {
          ok: false,
          reason: unreachable ? "herdr_unreachable" : "launch_failed",
          detail: `Herdr could not open a pane: ${split.message}`,
        };
      }
      const paneId = split.result.pane?.pane_id;
      if (!paneId) return { ok: false, reason: "launch_failed", detail: "Herdr answered pane.split without a pane id" };
      await c.call("pane.report_metadata", {
        pane_id: paneId,
        source: "clankie",
        tokens: { [TOKEN]: o.hireId, title: o.title },
      });
      const started = await c.call(
        "agent.start",
        {
          name: `${o.harness}-${o.hireId.slice(0, 8)}`,
          kind: o.harness,
          pane_id: paneId,
          args: o.argv.slice(1),
          timeout_ms: START_TIMEOUT_MS,
        },
        START_TIMEOUT_MS + 5000,
      );
      if (!started.ok) {
        // A refusal is definite; a lost answer may have started it: the pane stays, the hire is uncertain.
        if (started.kind === "error") {
          // Definite: nothing started in the pane this hire opened, so the hire closes it.
          await c.call("pane.close", { pane_id: paneId });
          return {
            ok: false,
            reason: "launch_failed",
            detail: `Herdr refused agent.start (${started.code}: ${started.message}); the pane ${paneId} this hire opened was closed`,
            paneId,
            paneClosed: true,
          };
        }
        return { ok: true, pane: { paneId, session: split.result.pane?.workspace_id ?? "" } };
      }
      return { ok: true, pane: { paneId, session: split.result.pane?.workspace_id ?? "" } };
    } finally {
      c.close();
    }
  }

  async liveness(paneId: string): Promise<PaneLiveness> {
    const c = await this.conn();
    if (typeof c === "string") return { state: "running", screen: "" };
    try {
      const got = await c.call("pane.get", { pane_id: paneId });
      if (!got.ok) return { state: got.kind === "error" ? "gone" : "running", screen: "" };
      const read = await c.call<{ read?: { text?: string } }>("pane.read", {
        pane_id: paneId,
        source: "visible",
        format: "text",
        strip_ansi: true,
      });
      return { state: "running", screen: read.ok ? (read.result.read?.text ?? "") : "" };
    } finally {
      c.close();
    }
  }

  async close(paneId: string): Promise<void> {
    const c = await this.conn();
    if (typeof c === "string") return;
    try {
      await c.call("pane.close", { pane_id: paneId });
    } finally {
      c.close();
    }
  }

  /**
   * Whether the pane still runs a process on `remote` (`--remote unix://SOCK`): gone when the
   * pane is (Herdr's definite error) or its foreground holds no such process; unknown when Herdr
   * cannot be asked. What keeps an agent-started Codex server alive (codex-server-keeper.ts).
   */
  async tuiState(paneId: string, remote: string): Promise<TuiState> {
    const c = await this.conn();
    if (typeof c === "string") return "unknown";
    try {
      const got = await c.call<{ process_info?: { foreground_processes?: { argv?: unknown; cmdline?: unknown }[] } }>(
        "pane.process_info",
        { pane_id: paneId },
      );
      if (!got.ok) return got.kind === "error" ? "gone" : "unknown";
      const procs = got.result.process_info?.foreground_processes ?? [];
      // Herdr gives argv, or only the joined cmdline (as the pane host reads it, panes/herdr.ts).
      const args = (p: { argv?: unknown; cmdline?: unknown }) =>
        Array.isArray(p.argv) ? p.argv.map(String) : typeof p.cmdline === "string" ? p.cmdline.split(" ") : [];
      return procs.some((p) => args(p).includes(remote)) ? "running" : "gone";
    } finally {
      c.close();
    }
  }

  /** Herdr gives every pane's processes HERDR_PANE_ID and HERDR_SOCKET_PATH; agent.start takes no environment. */
  processMarkers(paneId: string): Record<string, string>[] {
    return [{ HERDR_PANE_ID: paneId, HERDR_SOCKET_PATH: this.socketPath }];
  }

  async panesOf(hireId: string): Promise<{ paneId: string; session: string }[]> {
    const c = await this.conn();
    if (typeof c === "string") throw new Error(`Herdr unreachable: ${c}`);
    try {
      const list = await c.call<{
        panes?: { pane_id: string; workspace_id: string; tokens?: Record<string, string> }[];
      }>("pane.list", {});
      if (!list.ok) throw new Error(`pane.list failed: ${list.message}`);
      return (list.result.panes ?? [])
        .filter((p) => p.tokens?.[TOKEN] === hireId)
        .map((p) => ({ paneId: p.pane_id, session: p.workspace_id }));
    } finally {
      c.close();
    }
  }
}
