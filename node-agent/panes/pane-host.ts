/**
 * The one interface to whatever shows the owner the worker's terminal: Herdr (primary) or
 * tmux. A pane host tells which panes exist, what runs in their foreground, and when that
 * changes. It is never used to type a message (no send-keys, no pane.send_*, no agent.prompt).
 */

/** Agent state as the pane host observes it (Herdr's AgentStatus). */
export type PaneAgentStatus = "idle" | "working" | "blocked" | "done" | "unknown";

export interface PaneInfo {
  /** The host's pane id (Herdr "w1:p1", tmux "%3"). */
  paneId: string;
  /** Herdr terminal id / tmux window id; changes when the pane's terminal is replaced. */
  terminalId: string;
  /** Herdr session name / tmux session name. */
  sessionId: string;
  title: string;
  cwd: string;
  agentStatus: PaneAgentStatus;
  /** What the host claims about the agent session (Herdr's agent_session). Never authority. */
  agentSession?: { agent: string; kind: "id" | "path"; value: string } | undefined;
}

export interface PaneProcess {
  pid: number;
  name: string;
  argv: string[];
  cwd?: string | undefined;
}

export interface PaneProcessInfo {
  paneId: string;
  shellPid: number;
  foregroundProcessGroupId: number;
  tty: string;
  foregroundProcesses: PaneProcess[];
}

export type PaneEvent =
  | { kind: "pane_created" | "pane_closed" | "pane_updated"; paneId: string }
  | { kind: "agent_status_changed"; paneId: string; agentStatus: PaneAgentStatus };

export interface PaneHost {
  readonly kind: "herdr" | "tmux";
  listPanes(): Promise<PaneInfo[]>;
  processInfo(paneId: string): Promise<PaneProcessInfo>;
  /** Delivers changes until the returned function is called; a gap-free bootstrap is the host's job. */
  subscribe(onEvent: (e: PaneEvent) => void): Promise<() => void>;
}
