/**
 * Herdr as a pane host, over its NDJSON socket API (protocol 20): `pane.list`/`pane.get`,
 * `agent.list`, `pane.process_info`, and `events.subscribe` with a gap-free bootstrap:
 * subscribe on a second connection first, then take `session.snapshot`, then apply the
 * events buffered meanwhile, then go live. A dropped subscription is re-bootstrapped the
 * same way, and the resync reports panes that closed while it was down. Herdr's typing
 * methods are never used (herdr-client.ts refuses them).
 */
import type { PaneAgentStatus, PaneEvent, PaneHost, PaneInfo, PaneProcessInfo } from "./pane-host.js";
import { HerdrConnection, type HerdrEventLine, type HerdrOutcome } from "./herdr-client.js";

export const HERDR_PROTOCOL = 20;

export interface HerdrPaneHostOptions {
  socketPath: string;
  /** Herdr session name, reported as each pane's sessionId. */
  sessionName?: string | undefined;
  callTimeoutMs?: number | undefined;
  /** First delay before re-subscribing after the subscription socket dropped (doubles to 5 s). */
  reconnectMs?: number | undefined;
}

export class HerdrUnavailableError extends Error {
  readonly code = "herdr_unreachable";
}

export interface HerdrAgent {
  paneId: string;
  agent: string | undefined;
  agentStatus: PaneAgentStatus;
  interactiveReady: boolean;
  stateChangeSeq: number;
}

const SUBSCRIPTIONS = [
  "pane.created",
  "pane.closed",
  "pane.updated",
  "pane.moved",
  "pane.exited",
  "pane.agent_detected",
  "pane.agent_status_changed",
];
const STATUSES: readonly PaneAgentStatus[] = ["idle", "working", "blocked", "done", "unknown"];

function status(v: unknown): PaneAgentStatus {
  return STATUSES.includes(v as PaneAgentStatus) ? (v as PaneAgentStatus) : "unknown";
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export function paneFromHerdr(p: Record<string, unknown>, sessionName: string): PaneInfo | undefined {
  const paneId = str(p.pane_id);
  const terminalId = str(p.terminal_id);
  if (!paneId || !terminalId) return undefined;
  const s = p.agent_session as Record<string, unknown> | null | undefined;
  const kind = s?.kind === "id" || s?.kind === "path" ? s.kind : undefined;
  return {
    paneId,
    terminalId,
    sessionId: sessionName,
    title: str(p.title) ?? str(p.terminal_title_stripped) ?? str(p.label) ?? "",
    cwd: str(p.foreground_cwd) ?? str(p.cwd) ?? "",
    agentStatus: status(p.agent_status),
    agentSession:
      s && kind && str(s.agent) && str(s.value) ? { agent: str(s.agent)!, kind, value: str(s.value)! } : undefined,
  };
}

/** One pushed line as pane events (a move is the old id closing and the new one appearing). */
export function paneEventsFrom(line: HerdrEventLine): PaneEvent[] {
  const name = line.event.replace(/\./g, "_");
  const d = line.data;
  const pane = (d.pane ?? {}) as Record<string, unknown>;
  const id = str(d.pane_id) ?? str(pane.pane_id);
  switch (name) {
    case "pane_created":
      return id ? [{ kind: "pane_created", paneId: id }] : [];
    case "pane_closed":
    case "pane_exited":
      return id ? [{ kind: "pane_closed", paneId: id }] : [];
    case "pane_updated":
    case "pane_agent_detected":
      return id ? [{ kind: "pane_updated", paneId: id }] : [];
    case "pane_moved": {
      const prev = str(d.previous_pane_id);
      return [
        ...(prev ? [{ kind: "pane_closed" as const, paneId: prev }] : []),
        ...(id ? [{ kind: "pane_created" as const, paneId: id }] : []),
      ];
    }
    case "pane_agent_status_changed":
      return id ? [{ kind: "agent_status_changed", paneId: id, agentStatus: status(d.agent_status) }] : [];
    default:
      return [];
  }
}

export class HerdrPaneHost implements PaneHost {
  readonly kind = "herdr" as const;
  private requests: Promise<{ ok: true; connection: HerdrConnection } | { ok: false; message: string }> | undefined;
  private readonly timeoutMs: number;
  private readonly sessionName: string;
  private readonly subscriptions = new Set<() => void>();

  constructor(private readonly o: HerdrPaneHostOptions) {
    this.timeoutMs = o.callTimeoutMs ?? 5000;
    this.sessionName = o.sessionName ?? "default";
  }

  /** The shared request connection, reopened after a drop. */
  private async requestConnection(): Promise<
    { ok: true; connection: HerdrConnection } | { ok: false; message: string }
  > {
    let conn = this.requests ? await this.requests : undefined;
    if (!conn?.ok || !conn.connection.isOpen) {
      this.requests = HerdrConnection.open(this.o.socketPath, this.timeoutMs);
      conn = await this.requests;
    }
    return conn;
  }

  /** A call on the shared request connection. */
  async call<T = Record<string, unknown>>(
    method: string,
    params: Record<string, unknown> = {},
  ): Promise<HerdrOutcome<T>> {
    const conn = await this.requestConnection();
    if (!conn.ok) return { ok: false, kind: "unreachable", message: conn.message };
    return conn.connection.call<T>(method, params, this.timeoutMs);
  }

  private async must<T>(method: string, params: Record<string, unknown>): Promise<T> {
    const r = await this.call<T>(method, params);
    if (!r.ok) throw new HerdrUnavailableError(`${method}: ${r.kind}: ${r.message}`);
    return r.result;
  }

  async ping(): Promise<HerdrOutcome<{ protocol: number; version: string }>> {
    return this.call("ping", {});
  }

  async listPanes(): Promise<PaneInfo[]> {
    const r = await this.must<{ panes?: unknown }>("pane.list", {});
    if (!Array.isArray(r.panes)) throw new HerdrUnavailableError("pane.list: reply without panes");
    return (r.panes as Record<string, unknown>[])
      .map((p) => paneFromHerdr(p, this.sessionName))
      .filter((p): p is PaneInfo => p !== undefined);
  }

  /** One pane, or undefined when Herdr says it does not exist. */
  async getPane(paneId: string): Promise<PaneInfo | undefined> {
    const r = await this.call<{ pane?: Record<string, unknown> }>("pane.get", { pane_id: paneId });
    if (!r.ok && r.kind === "error" && r.code === "not_found") return undefined;
    if (!r.ok) throw new HerdrUnavailableError(`pane.get: ${r.kind}: ${r.message}`);
    return r.result.pane ? paneFromHerdr(r.result.pane, this.sessionName) : undefined;
  }

  /** The pane's visible screen as text (`pane.read`, source `visible`); a read, never input. */
  async readVisible(paneId: string): Promise<string> {
    const r = await this.must<{ read?: { text?: unknown } }>("pane.read", {
      pane_id: paneId,
      source: "visible",
      format: "text",
      strip_ansi: true,
    });
    if (typeof r.read?.text !== "string") throw new HerdrUnavailableError("pane.read: reply without text");
    return r.read.text;
  }

  /** Claude's guarded stop only (claude-stop.ts): one `esc` in exactly this pane. Throws when it may not have arrived. */
  async pressEscape(paneId: string): Promise<void> {
    const conn = await this.requestConnection();
    if (!conn.ok) throw new HerdrUnavailableError(`pane.send_keys: unreachable: ${conn.message}`);
    const r = await conn.connection.pressEscape(paneId, this.timeoutMs);
    if (!r.ok) throw new HerdrUnavailableError(`pane.send_keys: ${r.kind}: ${r.message}`);
  }

  async agents(): Promise<HerdrAgent[]> {
    const r = await this.must<{ agents?: unknown }>("agent.list", {});
    if (!Array.isArray(r.agents)) throw new HerdrUnavailableError("agent.list: reply without agents");
    return (r.agents as Record<string, unknown>[])
      .filter((a) => typeof a.pane_id === "string")
      .map((a) => ({
        paneId: a.pane_id as string,
        agent: str(a.agent),
        agentStatus: status(a.agent_status),
        interactiveReady: a.interactive_ready === true,
        stateChangeSeq: typeof a.state_change_seq === "number" ? a.state_change_seq : 0,
      }));
  }

  async processInfo(paneId: string): Promise<PaneProcessInfo> {
    const r = await this.must<{ process_info?: Record<string, unknown> }>("pane.process_info", { pane_id: paneId });
    const pi = r.process_info ?? {};
    const procs = Array.isArray(pi.foreground_processes) ? (pi.foreground_processes as Record<string, unknown>[]) : [];
    return {
      paneId,
      shellPid: typeof pi.shell_pid === "number" ? pi.shell_pid : -1,
      foregroundProcessGroupId:
        typeof pi.foreground_process_group_id === "number" ? pi.foreground_process_group_id : -1,
      tty: str(pi.tty) ?? "",
      foregroundProcesses: procs
        .filter((p) => typeof p.pid === "number")
        .map((p) => ({
          pid: p.pid as number,
          name: str(p.name) ?? "",
          argv: Array.isArray(p.argv) ? (p.argv as unknown[]).map(String) : (str(p.cmdline)?.split(" ") ?? []),
          cwd: str(p.cwd),
        })),
    };
  }

  async subscribe(onEvent: (e: PaneEvent) => void): Promise<() => void> {
    let stopped = false;
    let known = new Set<string>();
    let current: HerdrConnection | undefined;
    let retryTimer: NodeJS.Timeout | undefined;
    let backoffMs = this.o.reconnectMs ?? 200;

    const bootstrap = async (): Promise<string | undefined> => {
      const opened = await HerdrConnection.open(this.o.socketPath, this.timeoutMs);
      if (!opened.ok) return opened.message;
      const conn = opened.connection;
      let buffered: HerdrEventLine[] | undefined = [];
      const deliver = (line: HerdrEventLine) => {
        for (const e of paneEventsFrom(line)) {
          if (e.kind === "pane_created") known.add(e.paneId);
          if (e.kind === "pane_closed") known.delete(e.paneId);
          onEvent(e);
        }
      };
      conn.onEvent((line) => (buffered ? buffered.push(line) : deliver(line)));
      // 1. subscribe (events from now on are buffered) ...
      const ack = await conn.call<{ type?: string }>(
        "events.subscribe",
        { subscriptions: SUBSCRIPTIONS.map((type) => ({ type })) },
        this.timeoutMs,
      );
      if (!ack.ok || ack.result.type !== "subscription_started") {
        conn.close();
        return `events.subscribe: ${ack.ok ? `unexpected ${ack.result.type}` : ack.message}`;
      }
      // 2. ... then the snapshot, so nothing between the two is lost ...
      const snap = await this.call<{ snapshot?: { panes?: unknown } }>("session.snapshot", {});
      if (!snap.ok || !Array.isArray(snap.result.snapshot?.panes)) {
        conn.close();
        return `session.snapshot: ${snap.ok ? "reply without panes" : snap.message}`;
      }
      const now = new Set(
        (snap.result.snapshot.panes as Record<string, unknown>[])
          .map((p) => str(p.pane_id))
          .filter((x): x is string => !!x),
      );
      for (const id of known) if (!now.has(id)) onEvent({ kind: "pane_closed", paneId: id });
      for (const id of now) onEvent({ kind: known.has(id) ? "pane_updated" : "pane_created", paneId: id });
      known = now;
      // 3. ... then what arrived meanwhile, in order, then live.
      const pending = buffered;
      buffered = undefined;
      for (const line of pending) deliver(line);
      current = conn;
      conn.onClose(() => {
        if (!stopped) retry();
      });
      backoffMs = this.o.reconnectMs ?? 200;
      return undefined;
    };

    const retry = () => {
      if (stopped) return;
      retryTimer = setTimeout(() => {
        void bootstrap().then((err) => {
          if (err !== undefined) {
            backoffMs = Math.min(backoffMs * 2, 5000);
            retry();
          }
        });
      }, backoffMs);
      retryTimer.unref?.();
    };

    const err = await bootstrap();
    if (err !== undefined) throw new HerdrUnavailableError(err);
    const stop = () => {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      current?.close();
      this.subscriptions.delete(stop);
    };
    this.subscriptions.add(stop);
    return stop;
  }

  close(): void {
    for (const stop of [...this.subscriptions]) stop();
    void this.requests?.then((c) => c.ok && c.connection.close());
    this.requests = undefined;
  }
}
