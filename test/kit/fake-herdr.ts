/**
 * A fake Herdr server for tests. Herdr cannot be installed here (no npm or Debian package,
 * and no crates registry to build it from), so the Herdr client is tested against this
 * fake, which follows Herdr's published socket schema, protocol 20
 * (ogulcancelik/herdr docs/next/api/herdr-api.schema.json at 10974c8):
 *   request            {"id":string,"method":string,"params":object}
 *   success_response   {"id":string,"result":{"type":…,…}}   (pong, pane_list, pane_info,
 *                      agent_list, pane_process_info, pane_read, session_snapshot, subscription_started)
 *   error_response     {"id":string,"error":{"code":string,"message":string}}
 *   event              {"event":"pane_created"|…,"data":{"type":…,…}}  (lifecycle, EventEnvelope)
 *   subscription_event {"event":"pane.agent_status_changed","data":{pane_id,workspace_id,agent_status}}
 * Tests drive it (add/close panes, bursts, dropped sockets, garbage lines) and read what
 * the client called, including any typing method, which must never appear.
 */
import { createServer, type Server, type Socket } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface FakePane {
  pane_id: string;
  terminal_id: string;
  workspace_id: string;
  tab_id: string;
  focused: boolean;
  agent_status: "idle" | "working" | "blocked" | "done" | "unknown";
  revision: number;
  title?: string | null;
  cwd?: string | null;
  agent?: string | null;
  agent_session?: { source: string; agent: string; kind: "id" | "path"; value: string } | null;
}

export interface FakeProcessInfo {
  pane_id: string;
  shell_pid: number | null;
  foreground_process_group_id: number | null;
  tty: string | null;
  foreground_processes: { pid: number; name: string; argv?: string[] | null; cmdline?: string | null; cwd?: string | null }[];
}

export interface FakeHerdr {
  readonly socketPath: string;
  readonly calls: { method: string; params: Record<string, unknown> }[];
  addPane(pane: Partial<FakePane> & { pane_id: string }, processInfo?: Omit<FakeProcessInfo, "pane_id">): FakePane;
  closePane(paneId: string): void;
  setAgentStatus(paneId: string, status: FakePane["agent_status"]): void;
  /** What `pane.read` shows for the pane's visible screen. */
  setScreen(paneId: string, text: string): void;
  /** Runs once, after the next session.snapshot request arrives and before it is answered. */
  beforeNextSnapshot(fn: () => void): void;
  /** Destroys every subscription socket (a dropped socket), leaving the server up. */
  dropSubscriptions(): void;
  /** Sends a raw line to every connected client (garbage, truncated frames). */
  sendRawToAll(text: string): void;
  /** Make the next answer to `method` a raw string instead (e.g. a truncated frame). */
  corruptNextReply(method: string, raw: string): void;
  subscriberCount(): number;
  close(): Promise<void>;
}

export async function startFakeHerdr(): Promise<FakeHerdr> {
  const dir = mkdtempSync(join(tmpdir(), "fake-herdr-"));
  const socketPath = join(dir, "herdr.sock");
  const panes = new Map<string, FakePane>();
  const procs = new Map<string, FakeProcessInfo>();
  const screens = new Map<string, string>();
  const calls: FakeHerdr["calls"] = [];
  const clients = new Set<Socket>();
  const subscribers = new Set<Socket>();
  const corrupt = new Map<string, string>();
  let beforeSnapshot: (() => void) | undefined;

  const send = (s: Socket, obj: unknown) => {
    if (!s.destroyed) s.write(JSON.stringify(obj) + "\n");
  };
  const emit = (obj: unknown) => {
    for (const s of subscribers) send(s, obj);
  };

  const answer = (s: Socket, id: string, method: string, params: Record<string, unknown>) => {
    const ok = (result: unknown) => send(s, { id, result });
    const err = (code: string, message: string) => send(s, { id, error: { code, message } });
    const raw = corrupt.get(method);
    if (raw !== undefined) {
      corrupt.delete(method);
      s.write(raw);
      return;
    }
    const pane = typeof params.pane_id === "string" ? panes.get(params.pane_id) : undefined;
    switch (method) {
      case "ping":
        return ok({ type: "pong", version: "fake-0.0.0", protocol: 20 });
      case "pane.list":
        return ok({ type: "pane_list", panes: [...panes.values()] });
      case "pane.get":
        return pane ? ok({ type: "pane_info", pane }) : err("not_found", "pane not found");
      case "agent.list":
        return ok({ type: "agent_list", agents: [...panes.values()].map((p) => ({ ...p, interactive_ready: true, launch_pending: false, state_change_seq: p.revision })) });
      case "pane.process_info":
        return pane ? ok({ type: "pane_process_info", process_info: procs.get(pane.pane_id) ?? { pane_id: pane.pane_id, foreground_processes: [] } }) : err("not_found", "pane not found");
      case "pane.read": {
        if (!pane) return err("not_found", "pane not found");
        const sources = ["visible", "recent", "recent_unwrapped", "detection"];
        if (typeof params.source !== "string" || !sources.includes(params.source)) return err("invalid_params", "source must be one of visible, recent, recent_unwrapped, detection");
        const format = params.format === "ansi" ? "ansi" : "text";
        return ok({ type: "pane_read", read: { pane_id: pane.pane_id, workspace_id: pane.workspace_id, tab_id: pane.tab_id, source: params.source, format, text: screens.get(pane.pane_id) ?? "", revision: pane.revision, truncated: false } });
      }
      case "session.snapshot": {
        const fn = beforeSnapshot;
        beforeSnapshot = undefined;
        fn?.();
        return ok({ type: "session_snapshot", snapshot: { version: "fake-0.0.0", protocol: 20, workspaces: [], tabs: [], panes: [...panes.values()], layouts: [], agents: [] } });
      }
      case "events.subscribe":
        if (!Array.isArray(params.subscriptions)) return err("invalid_params", "subscriptions must be an array");
        ok({ type: "subscription_started" });
        subscribers.add(s);
        return;
      case "pane.send_text":
      case "pane.send_keys":
      case "pane.send_input":
      case "agent.send_keys":
      case "agent.send":
      case "agent.prompt":
        // Recorded in `calls`, so a test can prove the client never typed.
        return ok({ type: "ok" });
      default:
        return err("unknown_method", `unknown method ${method}`);
    }
  };

  const server: Server = createServer((s) => {
    clients.add(s);
    s.setEncoding("utf8");
    let buf = "";
    s.on("data", (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let req: { id?: unknown; method?: unknown; params?: unknown };
        try {
          req = JSON.parse(line);
        } catch {
          send(s, { id: "", error: { code: "invalid_request", message: "not JSON" } });
          continue;
        }
        if (typeof req.id !== "string" || typeof req.method !== "string" || typeof req.params !== "object" || req.params === null) {
          send(s, { id: String(req.id ?? ""), error: { code: "invalid_request", message: "id, method and params are required" } });
          continue;
        }
        calls.push({ method: req.method, params: req.params as Record<string, unknown> });
        answer(s, req.id, req.method, req.params as Record<string, unknown>);
      }
    });
    s.on("close", () => {
      clients.delete(s);
      subscribers.delete(s);
    });
    s.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));

  let terminalSeq = 0;
  return {
    socketPath,
    calls,
    addPane(p, processInfo) {
      const pane: FakePane = { terminal_id: `term_${++terminalSeq}`, workspace_id: p.pane_id.split(":")[0] ?? "w1", tab_id: `${p.pane_id.split(":")[0]}:t1`, focused: false, agent_status: "unknown", revision: 1, ...p };
      panes.set(pane.pane_id, pane);
      if (processInfo) procs.set(pane.pane_id, { pane_id: pane.pane_id, ...processInfo });
      emit({ event: "pane_created", data: { type: "pane_created", pane } });
      return pane;
    },
    closePane(paneId) {
      const pane = panes.get(paneId);
      if (!pane) return;
      panes.delete(paneId);
      procs.delete(paneId);
      emit({ event: "pane_closed", data: { type: "pane_closed", pane_id: paneId, workspace_id: pane.workspace_id } });
    },
    setScreen(paneId, text) {
      screens.set(paneId, text);
    },
    setAgentStatus(paneId, status) {
      const pane = panes.get(paneId);
      if (!pane) return;
      pane.agent_status = status;
      pane.revision++;
      emit({ event: "pane.agent_status_changed", data: { pane_id: paneId, workspace_id: pane.workspace_id, agent_status: status, agent: pane.agent ?? null } });
    },
    beforeNextSnapshot(fn) {
      beforeSnapshot = fn;
    },
    dropSubscriptions() {
      for (const s of subscribers) s.destroy();
      subscribers.clear();
    },
    sendRawToAll(text) {
      for (const s of clients) s.write(text);
    },
    corruptNextReply(method, raw) {
      corrupt.set(method, raw);
    },
    subscriberCount: () => subscribers.size,
    async close() {
      for (const s of clients) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
