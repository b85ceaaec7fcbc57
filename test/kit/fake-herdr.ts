/**
 * A fake Herdr server for tests. Herdr cannot be installed here (no npm or Debian package,
 * and no crates registry to build it from), so the Herdr client is tested against this
 * fake, which follows Herdr's published socket schema, protocol 20
 * (ogulcancelik/herdr docs/next/api/herdr-api.schema.json at 10974c8):
 *   request            {"id":string,"method":string,"params":object}
 *   success_response   {"id":string,"result":{"type":…,…}}   (pong, pane_list, pane_info,
 *                      agent_list, pane_process_info, pane_read, session_snapshot, subscription_started,
 *                      agent_started, ok)
 * Hiring (newer protocol, the clankie-herdr fork's PaneSplitParams / AgentStartParams /
 * PaneReportMetadataParams / PaneTarget): pane.split, agent.start, pane.report_metadata, pane.close.
 *   error_response     {"id":string,"error":{"code":string,"message":string}}
 *   event              {"event":"pane_created"|…,"data":{"type":…,…}}  (lifecycle, EventEnvelope)
 *   subscription_event {"event":"pane.agent_status_changed","data":{pane_id,workspace_id,agent_status}}
 * Tests drive it (add/close panes, bursts, dropped sockets, garbage lines) and read what
 * the client called, including any typing method, which must never appear.
 * With `terminals` (fake-herdr-terminals.ts) the panes `pane.split` opens are real
 * terminals and `agent.start` really launches the kind's binary from the owner's Herdr
 * integration (`integrate`), so a hire through Herdr runs a real harness; panes added by a
 * test with addPane stay descriptions only.
 */
import { createServer, type Server, type Socket } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HerdrIntegration, HerdrTerminals } from "./fake-herdr-terminals.js";

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
  tokens?: Record<string, string>;
}

export interface FakeProcessInfo {
  pane_id: string;
  shell_pid: number | null;
  foreground_process_group_id: number | null;
  tty: string | null;
  foreground_processes: {
    pid: number;
    name: string;
    argv?: string[] | null;
    cmdline?: string | null;
    cwd?: string | null;
  }[];
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
  /** Make the next agent.start answer this error (a refused launch). */
  failNextAgentStart(code: string, message: string): void;
  /** The owner's Herdr integration for an agent kind: what agent.start runs (needs `terminals`). */
  integrate(kind: string, integration: HerdrIntegration): void;
  close(): Promise<void>;
}

export async function startFakeHerdr(o: { terminals?: HerdrTerminals } = {}): Promise<FakeHerdr> {
  const terminals = o.terminals;
  const integrations = new Map<string, HerdrIntegration>();
  /** Panes backed by a real terminal (opened by pane.split with terminals). */
  const backed = new Set<string>();
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
  let agentStartFailure: { code: string; message: string } | undefined;
  let paneSeq = 100;

  const send = (s: Socket, obj: unknown) => {
    if (!s.destroyed) s.write(JSON.stringify(obj) + "\n");
  };
  const emit = (obj: unknown) => {
    for (const s of subscribers) send(s, obj);
  };

  /** A backed pane whose process exited is treated as closed (Herdr reports pane.exited; the fake closes it). */
  const prune = async (only?: string) => {
    for (const id of [...backed]) {
      if ((only !== undefined && id !== only) || (await terminals!.alive(id))) continue;
      if (!backed.delete(id)) continue;
      const pane = panes.get(id);
      panes.delete(id);
      await terminals!.close(id);
      if (pane)
        emit({ event: "pane_closed", data: { type: "pane_closed", pane_id: id, workspace_id: pane.workspace_id } });
    }
  };

  /** With real terminals, the answer waits for what they say (asynchronously); without, it is immediate. */
  const answer = (s: Socket, id: string, method: string, params: Record<string, unknown>) => {
    if (!terminals || corrupt.has(method)) return answerNow(s, id, method, params, undefined);
    const paneId = typeof params.pane_id === "string" ? params.pane_id : undefined;
    void (async () => {
      if (method === "pane.list" || method === "session.snapshot" || method === "agent.list") await prune();
      if (paneId) await prune(paneId);
      if (method === "pane.split") return split(s, id, params);
      if (method === "agent.start" && paneId && backed.has(paneId) && !agentStartFailure)
        return startAgent(s, id, paneId, params);
      const screen = method === "pane.read" && paneId && backed.has(paneId) ? await terminals.read(paneId) : undefined;
      answerNow(s, id, method, params, screen);
    })().catch((e: Error) => send(s, { id, error: { code: "internal", message: e.message } }));
  };

  /** pane.split on real terminals: the pane's shell runs with Herdr's pane environment. */
  const split = async (s: Socket, id: string, params: Record<string, unknown>) => {
    if (params.direction !== "right" && params.direction !== "down")
      return send(s, { id, error: { code: "invalid_params", message: "direction must be right or down" } });
    const paneId = `w1:p${++paneSeq}`;
    const created: FakePane = {
      pane_id: paneId,
      terminal_id: `term_${paneId}`,
      workspace_id: "w1",
      tab_id: "w1:t1",
      focused: params.focus === true,
      agent_status: "unknown",
      revision: 1,
      cwd: typeof params.cwd === "string" ? params.cwd : null,
    };
    try {
      await terminals!.open(paneId, created.cwd ?? "/", paneEnv(created));
    } catch (e) {
      return send(s, {
        id,
        error: { code: "internal", message: `could not open a terminal: ${(e as Error).message}` },
      });
    }
    backed.add(paneId);
    panes.set(paneId, created);
    emit({ event: "pane_created", data: { type: "pane_created", pane: created } });
    send(s, { id, result: { type: "pane_info", pane: created } });
  };

  /** agent.start on a real terminal: the integration's binary replaces the pane's shell. */
  const startAgent = async (s: Socket, id: string, paneId: string, params: Record<string, unknown>) => {
    const pane = panes.get(paneId)!;
    const err = (code: string, message: string) => send(s, { id, error: { code, message } });
    if (typeof params.name !== "string" || typeof params.kind !== "string")
      return err("invalid_params", "name and kind are required");
    const t = params.timeout_ms;
    if (t !== undefined && t !== null && (typeof t !== "number" || t < 3001 || t > 300000))
      return err("invalid_params", "timeout_ms must be 3001..300000");
    const integration = integrations.get(params.kind);
    if (!integration) return err("agent_unavailable", `no ${params.kind} integration is installed`);
    const args = Array.isArray(params.args) ? (params.args as string[]) : [];
    try {
      await terminals!.start(paneId, integration, args, paneEnv(pane));
    } catch (e) {
      return err("agent_start_failed", (e as Error).message);
    }
    emit({
      event: "pane.agent_detected",
      data: { pane_id: paneId, workspace_id: pane.workspace_id, agent: params.kind },
    });
    pane.agent = params.kind;
    pane.revision++;
    send(s, {
      id,
      result: {
        type: "agent_started",
        agent: { ...pane, name: params.name, agent_status: "unknown" },
        argv: [integration.bin, ...args],
      },
    });
  };

  /** What Herdr gives every pane's processes. */
  const paneEnv = (p: FakePane) => ({
    HERDR_ENV: "1",
    HERDR_SOCKET_PATH: socketPath,
    HERDR_WORKSPACE_ID: p.workspace_id,
    HERDR_TAB_ID: p.tab_id,
    HERDR_PANE_ID: p.pane_id,
  });

  const answerNow = (
    s: Socket,
    id: string,
    method: string,
    params: Record<string, unknown>,
    screen: string | undefined,
  ) => {
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
        return ok({
          type: "agent_list",
          agents: [...panes.values()].map((p) => ({
            ...p,
            interactive_ready: true,
            launch_pending: false,
            state_change_seq: p.revision,
          })),
        });
      case "pane.process_info":
        if (pane && backed.has(pane.pane_id)) {
          void terminals!.processInfo(pane.pane_id).then(
            (info) =>
              info
                ? ok({ type: "pane_process_info", process_info: { pane_id: pane.pane_id, ...info } })
                : err("not_found", "pane not found"),
            (e: Error) => err("internal", e.message),
          );
          return;
        }
        return pane
          ? ok({
              type: "pane_process_info",
              process_info: procs.get(pane.pane_id) ?? { pane_id: pane.pane_id, foreground_processes: [] },
            })
          : err("not_found", "pane not found");
      case "pane.read": {
        if (!pane) return err("not_found", "pane not found");
        const sources = ["visible", "recent", "recent_unwrapped", "detection"];
        if (typeof params.source !== "string" || !sources.includes(params.source))
          return err("invalid_params", "source must be one of visible, recent, recent_unwrapped, detection");
        const format = params.format === "ansi" ? "ansi" : "text";
        return ok({
          type: "pane_read",
          read: {
            pane_id: pane.pane_id,
            workspace_id: pane.workspace_id,
            tab_id: pane.tab_id,
            source: params.source,
            format,
            text: screen ?? screens.get(pane.pane_id) ?? "",
            revision: pane.revision,
            truncated: false,
          },
        });
      }
      case "session.snapshot": {
        const fn = beforeSnapshot;
        beforeSnapshot = undefined;
        fn?.();
        return ok({
          type: "session_snapshot",
          snapshot: {
            version: "fake-0.0.0",
            protocol: 20,
            workspaces: [],
            tabs: [],
            panes: [...panes.values()],
            layouts: [],
            agents: [],
          },
        });
      }
      case "events.subscribe":
        if (!Array.isArray(params.subscriptions)) return err("invalid_params", "subscriptions must be an array");
        ok({ type: "subscription_started" });
        subscribers.add(s);
        return;
      case "pane.split": {
        if (params.direction !== "right" && params.direction !== "down")
          return err("invalid_params", "direction must be right or down");
        const id = `w1:p${++paneSeq}`;
        const created: FakePane = {
          pane_id: id,
          terminal_id: `term_${id}`,
          workspace_id: "w1",
          tab_id: "w1:t1",
          focused: params.focus === true,
          agent_status: "unknown",
          revision: 1,
          cwd: typeof params.cwd === "string" ? params.cwd : null,
        };
        panes.set(id, created);
        emit({ event: "pane_created", data: { type: "pane_created", pane: created } });
        return ok({ type: "pane_info", pane: created });
      }
      case "pane.report_metadata":
        if (!pane) return err("not_found", "pane not found");
        if (typeof params.source !== "string") return err("invalid_params", "source is required");
        pane.tokens = { ...(pane.tokens ?? {}), ...((params.tokens ?? {}) as Record<string, string>) };
        pane.revision++;
        return ok({ type: "ok" });
      case "agent.start": {
        if (!pane) return err("not_found", "pane not found");
        if (typeof params.name !== "string" || typeof params.kind !== "string")
          return err("invalid_params", "name and kind are required");
        const t = params.timeout_ms;
        if (t !== undefined && t !== null && (typeof t !== "number" || t < 3001 || t > 300000))
          return err("invalid_params", "timeout_ms must be 3001..300000");
        if (agentStartFailure) {
          const f = agentStartFailure;
          agentStartFailure = undefined;
          return err(f.code, f.message);
        }
        const args = Array.isArray(params.args) ? (params.args as string[]) : [];
        pane.agent = params.kind;
        pane.revision++;
        return ok({
          type: "agent_started",
          agent: { ...pane, name: params.name, agent_status: "unknown" },
          argv: [params.kind, ...args],
        });
      }
      case "pane.close":
        if (!pane) return err("not_found", "pane not found");
        panes.delete(pane.pane_id);
        procs.delete(pane.pane_id);
        if (backed.delete(pane.pane_id)) void terminals!.close(pane.pane_id);
        emit({
          event: "pane_closed",
          data: { type: "pane_closed", pane_id: pane.pane_id, workspace_id: pane.workspace_id },
        });
        return ok({ type: "ok" });
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
        if (
          typeof req.id !== "string" ||
          typeof req.method !== "string" ||
          typeof req.params !== "object" ||
          req.params === null
        ) {
          send(s, {
            id: String(req.id ?? ""),
            error: { code: "invalid_request", message: "id, method and params are required" },
          });
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
      const pane: FakePane = {
        terminal_id: `term_${++terminalSeq}`,
        workspace_id: p.pane_id.split(":")[0] ?? "w1",
        tab_id: `${p.pane_id.split(":")[0]}:t1`,
        focused: false,
        agent_status: "unknown",
        revision: 1,
        ...p,
      };
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
      emit({
        event: "pane.agent_status_changed",
        data: { pane_id: paneId, workspace_id: pane.workspace_id, agent_status: status, agent: pane.agent ?? null },
      });
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
    failNextAgentStart(code, message) {
      agentStartFailure = { code, message };
    },
    integrate(kind, integration) {
      integrations.set(kind, integration);
    },
    async close() {
      terminals?.shutdown();
      for (const s of clients) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
