/**
 * Read-only observations of Codex threads over an app-server connection: which loaded
 * thread is the pane's, its status and active turn (`thread/read` + the latest turn from
 * `thread/turns/list`), and where a user message with our client id landed. Nothing here
 * resumes, starts or answers anything. Replies of an unexpected shape are typed failures.
 */
import type { CallOutcome, CodexConnection } from "./connection.js";

export type ThreadStatusType = "idle" | "active" | "notLoaded" | "systemError";

export interface ThreadObservation {
  threadId: string;
  status: ThreadStatusType;
  activeFlags: string[];
  /** The in-progress turn when the thread is active. */
  activeTurnId: string | undefined;
  cwd: string;
}

export type Observed<T> = { ok: true; value: T } | { ok: false; reason: string; detail: string; mayRetry?: boolean };

interface RawThread {
  id?: unknown;
  ephemeral?: unknown;
  cwd?: unknown;
  parentThreadId?: unknown;
  originator?: unknown;
  status?: { type?: unknown; activeFlags?: unknown };
}
interface RawTurn {
  id?: unknown;
  status?: unknown;
  items?: {
    type?: unknown;
    id?: unknown;
    clientId?: unknown;
    startedAtMs?: unknown;
    content?: { type?: unknown; text?: unknown }[];
  }[];
}

function failed(what: string, o: CallOutcome): Observed<never> {
  if (o.ok) return { ok: false, reason: "bad_reply", detail: `${what}: reply of an unexpected shape` };
  return {
    ok: false,
    reason: o.kind === "error" ? "codex_error" : `connection_${o.kind}`,
    detail: `${what}: ${o.message}`,
  };
}

async function loadedThreadIds(conn: CodexConnection): Promise<Observed<string[]>> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 20; page++) {
    const r: CallOutcome<{ data?: unknown; nextCursor?: unknown }> = await conn.call("thread/loaded/list", { cursor });
    if (!r.ok || !Array.isArray(r.result?.data)) return failed("thread/loaded/list", r);
    ids.push(...(r.result.data as unknown[]).filter((x): x is string => typeof x === "string"));
    cursor = typeof r.result.nextCursor === "string" ? r.result.nextCursor : null;
    if (!cursor) return { ok: true, value: ids };
  }
  return { ok: false, reason: "too_many_threads", detail: "thread/loaded/list did not end within 20 pages" };
}

async function readThread(conn: CodexConnection, threadId: string): Promise<Observed<RawThread>> {
  const r = await conn.call<{ thread?: RawThread }>("thread/read", { threadId });
  if (!r.ok || typeof r.result?.thread?.id !== "string") return failed("thread/read", r);
  return { ok: true, value: r.result.thread };
}

/**
 * The pane's thread: the only loaded, persisted (non-ephemeral), top-level thread whose cwd
 * is the TUI's. The TUI's own helper threads are ephemeral; subagents have a parent. More than
 * one candidate is ambiguous and picks none: another pane's thread must never be chosen.
 */
export async function pickPaneThread(conn: CodexConnection, cwd: string): Promise<Observed<string>> {
  const ids = await loadedThreadIds(conn);
  if (!ids.ok) return ids;
  const matches: RawThread[] = [];
  for (const id of ids.value) {
    const t = await readThread(conn, id);
    if (!t.ok) continue; // unloaded in the meantime: not a candidate
    if (t.value.ephemeral === false && t.value.parentThreadId == null && t.value.cwd === cwd) matches.push(t.value);
  }
  // Several candidates: a thread the TUI created beats one another client started.
  const tui = matches.filter((t) => t.originator === "codex-tui");
  const pool = tui.length > 0 ? tui : matches;
  if (pool.length === 1) return { ok: true, value: String(pool[0]!.id) };
  if (pool.length === 0)
    return { ok: false, reason: "no_thread", detail: `no loaded, persisted thread with cwd ${cwd}`, mayRetry: true };
  return {
    ok: false,
    reason: "ambiguous_thread",
    detail: `${pool.length} loaded threads share cwd ${cwd}; none is picked`,
  };
}

/** How often, and how far apart, a thread seen between turns is read again before it counts as in flux. */
const IN_FLUX_REREADS = 4;
const IN_FLUX_GAP_MS = 40;

/**
 * Status and active turn of one thread, re-read now. A thread that is active while its latest
 * turn has not started (or has just ended) is between two states for a few ms: it is read again,
 * briefly, so a message sent just as a turn ends is not refused for a state that is already gone.
 */
export async function observeThread(conn: CodexConnection, threadId: string): Promise<Observed<ThreadObservation>> {
  let seen = await observeThreadOnce(conn, threadId);
  for (let i = 1; i < IN_FLUX_REREADS && !seen.ok && seen.reason === "turn_in_flux"; i++) {
    await new Promise((r) => setTimeout(r, IN_FLUX_GAP_MS));
    seen = await observeThreadOnce(conn, threadId);
  }
  return seen;
}

async function observeThreadOnce(conn: CodexConnection, threadId: string): Promise<Observed<ThreadObservation>> {
  const ids = await loadedThreadIds(conn);
  if (!ids.ok) return ids;
  if (!ids.value.includes(threadId))
    return { ok: false, reason: "thread_not_loaded", detail: `thread ${threadId} is not loaded in this app-server` };
  const t = await readThread(conn, threadId);
  if (!t.ok) return t;
  if (t.value.ephemeral !== false)
    return { ok: false, reason: "thread_ephemeral", detail: `thread ${threadId} is ephemeral` };
  const type = t.value.status?.type;
  if (type !== "idle" && type !== "active" && type !== "notLoaded" && type !== "systemError") {
    return { ok: false, reason: "bad_reply", detail: `thread/read: unknown status ${JSON.stringify(type)}` };
  }
  const activeFlags = Array.isArray(t.value.status?.activeFlags)
    ? (t.value.status.activeFlags as unknown[]).map(String)
    : [];
  let activeTurnId: string | undefined;
  if (type === "active") {
    const turns = await conn.call<{ data?: RawTurn[] }>("thread/turns/list", { threadId, limit: 1 });
    if (!turns.ok || !Array.isArray(turns.result?.data)) return failed("thread/turns/list", turns);
    const latest = turns.result.data[0];
    if (latest?.status !== "inProgress" || typeof latest.id !== "string") {
      return {
        ok: false,
        reason: "turn_in_flux",
        detail: "the thread is active but its latest turn is not in progress",
      };
    }
    activeTurnId = latest.id;
  }
  return { ok: true, value: { threadId, status: type, activeFlags, activeTurnId, cwd: String(t.value.cwd ?? "") } };
}

export interface ClientMessage {
  clientId: string;
  itemId: string;
  turnId: string;
  text: string;
  /** Wall-clock ms when Codex took the message in (0 when it did not say). */
  atMs: number;
}

/** User messages that carry a client id, newest turns first, up to `maxTurns` turns. */
export async function listClientMessages(
  conn: CodexConnection,
  threadId: string,
  maxTurns: number,
): Promise<Observed<{ messages: ClientMessage[]; complete: boolean }>> {
  const messages: ClientMessage[] = [];
  let cursor: string | null = null;
  let seen = 0;
  while (seen < maxTurns) {
    const r: CallOutcome<{ data?: RawTurn[]; nextCursor?: unknown }> = await conn.call("thread/turns/list", {
      threadId,
      cursor,
      limit: Math.min(20, maxTurns - seen),
      itemsView: "full",
    });
    if (!r.ok || !Array.isArray(r.result?.data)) return failed("thread/turns/list", r);
    for (const turn of r.result.data) {
      seen++;
      for (const item of turn.items ?? []) {
        if (item.type !== "userMessage" || typeof item.clientId !== "string" || typeof item.id !== "string") continue;
        const text = (item.content ?? [])
          .map((c) => (c.type === "text" && typeof c.text === "string" ? c.text : ""))
          .join("");
        messages.push({
          clientId: item.clientId,
          itemId: item.id,
          turnId: String(turn.id),
          text,
          atMs: typeof item.startedAtMs === "number" ? item.startedAtMs : 0,
        });
      }
    }
    cursor = typeof r.result.nextCursor === "string" ? r.result.nextCursor : null;
    if (!cursor) return { ok: true, value: { messages, complete: true } };
  }
  return { ok: true, value: { messages, complete: false } };
}

export interface QueuedMessage {
  queuedId: string;
  clientId: string;
  text: string;
}

export async function listQueue(conn: CodexConnection, threadId: string): Promise<Observed<QueuedMessage[]>> {
  const r = await conn.call<{ data?: { id?: unknown; clientUserMessageId?: unknown; input?: { text?: unknown }[] }[] }>(
    "thread/queue/list",
    { threadId },
  );
  if (!r.ok || !Array.isArray(r.result?.data)) return failed("thread/queue/list", r);
  return {
    ok: true,
    value: r.result.data.map((q) => ({
      queuedId: String(q.id),
      clientId: String(q.clientUserMessageId ?? ""),
      text: (q.input ?? []).map((i) => (typeof i.text === "string" ? i.text : "")).join(""),
    })),
  };
}
