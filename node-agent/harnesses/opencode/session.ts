/**
 * Reading an OpenCode session back for receipts and reconciliation: v1's stored messages and,
 * on a v2 server, v2's durable event history (paged by seq): the two are separate stores. Entries are ours only when the message id
 * carries our delivery id. Any failed read marks the result incomplete: a gap, not a verdict.
 */
import { contentFingerprint } from "../../../shared/fingerprint.js";
import type { SessionEntry } from "../adapter.js";
import { callOpenCode, jsonBody } from "./http.js";
import { deliveryIdOf } from "./ids.js";
import { openCodeEndpoint, type OpenCodeControl } from "./control.js";

interface DurableEvent {
  type: string;
  durable?: { seq?: number };
  data?: { messageID?: string; timestamp?: number; prompt?: { text?: string } };
}

/** OpenCode refuses a history page larger than 100. */
const PAGE = 100;
/** Hard stop on paging a pathological history; reaching it leaves the read incomplete. */
const MAX_PAGES = 500;

async function historyPage(
  control: OpenCodeControl,
  timeoutMs: number,
  afterSeq: number,
): Promise<{ events: DurableEvent[]; hasMore: boolean } | undefined> {
  const sid = encodeURIComponent(control.sessionId);
  const o = await callOpenCode(openCodeEndpoint(control), {
    method: "GET",
    path: `/api/session/${sid}/history?after=${afterSeq}&limit=${PAGE}`,
    timeoutMs,
  });
  if (o.kind !== "answered" || o.status !== 200) return undefined;
  const body = jsonBody<{ data?: DurableEvent[]; hasMore?: boolean }>(o);
  if (!Array.isArray(body?.data)) return undefined;
  return { events: body.data, hasMore: body.hasMore === true };
}

/** Both stores on a v2 server (v1 holds our prompt_async writes, v2 any earlier v2 writes); v1 alone otherwise. */
export async function readOpenCodeSession(
  control: OpenCodeControl,
  timeoutMs: number,
  api: "v2" | "v1",
  sinceMs: number,
): Promise<{ entries: SessionEntry[]; complete: boolean }> {
  const [v1, v2] = await Promise.all([
    readV1(control, timeoutMs, sinceMs),
    api === "v2" ? readV2(control, timeoutMs, sinceMs) : Promise.resolve({ entries: [], complete: true }),
  ]);
  const entries = [...v2.entries, ...v1.entries].sort((a, b) => a.atMs - b.atMs);
  return { entries, complete: v1.complete && v2.complete };
}

async function readV2(
  control: OpenCodeControl,
  timeoutMs: number,
  sinceMs: number,
): Promise<{ entries: SessionEntry[]; complete: boolean }> {
  const entries: SessionEntry[] = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const got = await historyPage(control, timeoutMs, after);
    if (!got) return { entries, complete: false };
    for (const e of got.events) {
      if (e.type !== "session.next.prompt.admitted" || !e.data?.messageID) continue;
      const deliveryId = deliveryIdOf(e.data.messageID);
      const atMs = e.data.timestamp ?? 0;
      if (!deliveryId || atMs < sinceMs) continue;
      entries.push({
        deliveryId,
        nativeReceiptId: `${control.sessionId}#${e.durable?.seq ?? "?"}`,
        contentFingerprint: contentFingerprint(e.data.prompt?.text ?? ""),
        atMs,
      });
    }
    const last = got.events.at(-1)?.durable?.seq;
    if (!got.hasMore || last === undefined) return { entries, complete: true };
    after = last;
  }
  return { entries, complete: false };
}

interface V1Message {
  info?: { id?: string; role?: string; time?: { created?: number } };
  parts?: { type?: string; text?: string }[];
}

async function readV1(
  control: OpenCodeControl,
  timeoutMs: number,
  sinceMs: number,
): Promise<{ entries: SessionEntry[]; complete: boolean }> {
  const sid = encodeURIComponent(control.sessionId);
  const o = await callOpenCode(openCodeEndpoint(control), {
    method: "GET",
    path: `/session/${sid}/message`,
    timeoutMs,
  });
  const rows = jsonBody<V1Message[]>(o);
  if (o.kind !== "answered" || o.status !== 200 || !Array.isArray(rows)) return { entries: [], complete: false };
  const entries: SessionEntry[] = [];
  for (const m of rows) {
    const id = m.info?.id;
    const deliveryId = id ? deliveryIdOf(id) : undefined;
    const atMs = m.info?.time?.created ?? 0;
    if (!id || !deliveryId || m.info?.role !== "user" || atMs < sinceMs) continue;
    const text = (m.parts ?? [])
      .filter((p) => p.type === "text")
      .map((p) => p.text ?? "")
      .join("");
    entries.push({
      deliveryId,
      nativeReceiptId: `${control.sessionId}#${id}`,
      contentFingerprint: contentFingerprint(text),
      atMs,
    });
  }
  return { entries, complete: true };
}
