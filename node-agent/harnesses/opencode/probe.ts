/**
 * Whether an OpenCode seat's server and session are live, and what runs there. Observed on the
 * pinned 1.18.33: v1 (`/session/…`, what the TUI and prompt_async use) and v2 (`/api/session/…`)
 * keep separate run states, so `/session/status` does not show a v2 run and
 * `/api/session/active` does not show a v1 run. The session is found through v1 (it knows every
 * session, whichever API made it, and names its directory); both run states are read.
 */
import { SeatStatus } from "../../../shared/verdicts.js";
import type { HttpOutcome } from "./http.js";
import { jsonBody } from "./http.js";
import type { OpenCodeControl } from "./control.js";

export type OpenCodeProbe =
  | {
      ok: true;
      /** "v1" for a server without the v2 routes. */
      api: "v2" | "v1";
      /** A v1 turn (prompt_async, the TUI) is running. */
      v1Busy: boolean;
      /** A v2 run (another client's /api/session/:id/prompt) is running. */
      v2Running: boolean;
      /** The session's directory: OpenCode's instance (its MCP servers) is per directory. */
      directory: string | undefined;
      /** A v1 turn OpenCode is retrying: its own status message (e.g. "Cannot connect to API: …") and attempt. */
      v1Retry?: { message: string; attempt: number } | undefined;
    }
  | { ok: false; outcome: "refuted" | "unknown"; status: SeatStatus; detail: string };

export type OpenCodeCall = (method: "GET" | "POST", path: string, body?: unknown) => Promise<HttpOutcome>;

export const isRunning = (p: OpenCodeProbe): boolean => p.ok && (p.v1Busy || p.v2Running);

/** The query naming the session's directory, so OpenCode serves it from that directory's instance. */
export function directoryQuery(p: OpenCodeProbe): string {
  return p.ok && p.directory ? `?directory=${encodeURIComponent(p.directory)}` : "";
}

function failed(control: OpenCodeControl, o: HttpOutcome, what: string): OpenCodeProbe {
  if (o.kind === "not_connected")
    return { ok: false, outcome: "refuted", status: SeatStatus.Offline, detail: o.detail };
  if (o.kind === "lost")
    return { ok: false, outcome: "unknown", status: SeatStatus.Unknown, detail: `${what}: ${o.detail}` };
  if (o.status === 401)
    return {
      ok: false,
      outcome: "refuted",
      status: SeatStatus.Unknown,
      detail: `${what}: the server refused our credentials (401)`,
    };
  if (o.status === 404)
    return {
      ok: false,
      outcome: "refuted",
      status: SeatStatus.Offline,
      detail: `${what}: session ${control.sessionId} is not on this server`,
    };
  return { ok: false, outcome: "unknown", status: SeatStatus.Unknown, detail: `${what}: HTTP ${o.status}` };
}

export async function probeOpenCode(call: OpenCodeCall, control: OpenCodeControl): Promise<OpenCodeProbe> {
  const sid = encodeURIComponent(control.sessionId);
  const info = await call("GET", `/session/${sid}`);
  if (info.kind !== "answered" || info.status !== 200) return failed(control, info, "GET /session/{id}");
  const session = jsonBody<{ id?: string; directory?: string }>(info);
  if (session?.id !== control.sessionId)
    return {
      ok: false,
      outcome: "unknown",
      status: SeatStatus.Unknown,
      detail: "GET /session/{id}: not the expected session",
    };
  const directory = typeof session.directory === "string" && session.directory ? session.directory : undefined;
  const q = directory ? `?directory=${encodeURIComponent(directory)}` : "";
  // The two run states are read together: the proof is stamped when both are in.
  const [active, status] = await Promise.all([call("GET", "/api/session/active"), call("GET", `/session/status${q}`)]);
  if (status.kind !== "answered" || status.status !== 200) return failed(control, status, "GET /session/status");
  const states = jsonBody<Record<string, { type?: string; message?: unknown; attempt?: unknown }>>(status);
  if (!states || typeof states !== "object")
    return {
      ok: false,
      outcome: "unknown",
      status: SeatStatus.Unknown,
      detail: "GET /session/status: not the expected JSON",
    };
  const v1Type = states[control.sessionId]?.type;
  const v1Busy = v1Type === "busy" || v1Type === "retry";
  const s = states[control.sessionId];
  const v1Retry =
    v1Type === "retry" && typeof s?.message === "string"
      ? { message: s.message, attempt: typeof s.attempt === "number" ? s.attempt : 0 }
      : undefined;
  if (active.kind === "answered" && active.status === 404)
    return { ok: true, api: "v1", v1Busy, v2Running: false, directory, v1Retry };
  if (active.kind !== "answered" || active.status !== 200) return failed(control, active, "GET /api/session/active");
  const runs = jsonBody<{ data?: Record<string, { type?: string }> }>(active)?.data;
  if (!runs)
    return {
      ok: false,
      outcome: "unknown",
      status: SeatStatus.Unknown,
      detail: "GET /api/session/active: not the expected JSON",
    };
  return {
    ok: true,
    api: "v2",
    v1Busy,
    v2Running: runs[control.sessionId]?.type === "running",
    directory,
    v1Retry,
  };
}
