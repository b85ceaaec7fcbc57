/**
 * Opening and closing the one pane a hire owns, on the agent's pane host: a tmux window
 * (tmux-opener.ts) or Herdr's pane.split + agent.start (herdr-opener.ts). Each pane and its
 * processes carry the hire id, so a census can find every effect of a hire.
 */
export const HIRE_ENV = "CLANKIE_HIRE_ID";

export interface OpenedPane {
  paneId: string;
  session: string;
}

export type OpenOutcome =
  | { ok: true; pane: OpenedPane }
  | {
      ok: false;
      reason: "herdr_unreachable" | "launch_failed";
      detail: string;
      controlFix?: string;
      paneId?: string;
      paneClosed?: boolean;
    };

export interface PaneLiveness {
  /** gone: the pane no longer exists; dead: its process exited (the pane stays for reading). */
  state: "running" | "dead" | "gone";
  screen: string;
}

export interface PaneOpener {
  readonly kind: "tmux" | "herdr";
  open(o: {
    hireId: string;
    title: string;
    cwd: string;
    argv: string[];
    env: Record<string, string>;
    harness: string;
  }): Promise<OpenOutcome>;
  /** Read-only: is the pane there, and what does its visible screen show. */
  liveness(paneId: string): Promise<PaneLiveness>;
  /** Closes a pane this hire opened, after a definite launch failure. */
  close(paneId: string): Promise<void>;
  /** Panes (and their sessions) carrying this hire id, for the census. */
  panesOf(hireId: string): Promise<{ paneId: string; session: string }[]>;
  /**
   * Environment pairs every process in the pane carries, for a host whose launch takes no
   * environment (so the hire marker cannot be set): the census finds them by these.
   */
  processMarkers?(paneId: string): Record<string, string>[];
}
