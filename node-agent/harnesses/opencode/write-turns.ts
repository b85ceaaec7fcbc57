/**
 * Rule 39 for OpenCode, which names no turns: native idle releases dispatch only after the exact
 * active turn is observed terminal. What OpenCode does give is its own message ids, which sort by
 * time, and each assistant message's `time.completed`, `finish` and `error`. So a write records,
 * before its request leaves, the newest message of the session while a turn runs (the turn our
 * message waits behind); that turn reads terminal only once the newest assistant message at or
 * after it has completed with a final `finish` (not "tool-calls": another step follows) or an
 * error. Kept in memory (bounded): after an agent restart the turn is unknown, never released.
 */
import type { WriteTurnState } from "../adapter.js";
import type { OpenCodeControl } from "./control.js";
import { jsonBody } from "./http.js";
import type { OpenCodeCall } from "./probe.js";

const MAX_RECORDS = 1000;
/** How many of the newest messages are read; a turn further back is unknown. */
const WINDOW = 50;

interface Message {
  info?: {
    id?: string;
    role?: string;
    finish?: string;
    error?: unknown;
    time?: { completed?: number };
  };
}

async function newest(call: OpenCodeCall, control: OpenCodeControl, q: string): Promise<Message[] | undefined> {
  const sid = encodeURIComponent(control.sessionId);
  const o = await call("GET", `/session/${sid}/message${q ? `${q}&` : "?"}limit=${WINDOW}`);
  if (o.kind !== "answered" || o.status !== 200) return undefined;
  const list = jsonBody<Message[]>(o);
  return Array.isArray(list) ? list : undefined;
}

export class OpenCodeWriteTurns {
  private readonly byDelivery = new Map<string, { sessionId: string; anchor: string | null | undefined }>();

  /** Before the write leaves: null when no turn runs, else the newest message id (undefined: unreadable). */
  async record(
    call: OpenCodeCall,
    control: OpenCodeControl,
    deliveryId: string,
    running: boolean,
    q: string,
  ): Promise<void> {
    let anchor: string | null | undefined = null;
    if (running) {
      const list = await newest(call, control, q);
      anchor = list?.length ? list[list.length - 1]?.info?.id : undefined;
    }
    if (this.byDelivery.size >= MAX_RECORDS) this.byDelivery.delete(this.byDelivery.keys().next().value!);
    this.byDelivery.set(deliveryId.toLowerCase(), { sessionId: control.sessionId, anchor });
  }

  async observe(call: OpenCodeCall, control: OpenCodeControl, deliveryId: string, q: string): Promise<WriteTurnState> {
    const rec = this.byDelivery.get(deliveryId.toLowerCase());
    if (!rec || rec.sessionId !== control.sessionId || rec.anchor === undefined) return "unknown";
    if (rec.anchor === null) return "terminal";
    const list = await newest(call, control, q);
    if (!list) return "unknown";
    const anchor = rec.anchor;
    if (!list.some((m) => m.info?.id === anchor) && list[0]?.info?.id && list[0].info.id > anchor) return "unknown";
    const last = list.filter((m) => m.info?.role === "assistant" && (m.info.id ?? "") >= anchor).pop();
    if (!last?.info) return "active";
    if (last.info.error) return "terminal";
    return typeof last.info.time?.completed === "number" && last.info.finish && last.info.finish !== "tool-calls"
      ? "terminal"
      : "active";
  }
}
