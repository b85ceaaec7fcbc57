/**
 * Reads a Pi session file (JSONL, Pi's session-format.md) for reconciliation (rules 30, 42):
 * a delivery is in the session only where a `clankie-delivery` custom entry, written by our
 * extension, binds its delivery id to an entry id AND that exact entry is a user message.
 * The entry's own text gives the fingerprint. A user message with the same text under any
 * other id, or with no binding, is not ours: content never substitutes for the id.
 */
import { readFile } from "node:fs/promises";
import { contentFingerprint } from "../../../shared/fingerprint.js";
import { PI_DELIVERY_ENTRY, piUserText } from "./session-entry.js";
import type { SessionEntry } from "../adapter.js";

export interface PiSessionFileRead {
  entries: SessionEntry[];
  /** Lines that were not JSON (a line still being written is one): the read is partial. */
  badLines: number;
}

export function parsePiSession(text: string): PiSessionFileRead {
  const messages = new Map<string, { text: string; atMs: number }>();
  const bindings: { deliveryId: string; entryId: string }[] = [];
  let badLines = 0;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let e: {
      type?: unknown;
      id?: unknown;
      timestamp?: unknown;
      message?: unknown;
      customType?: unknown;
      data?: unknown;
    };
    try {
      e = JSON.parse(line);
    } catch {
      badLines++;
      continue;
    }
    if (e.type === "message" && typeof e.id === "string") {
      const t = piUserText(e.message);
      if (t !== undefined)
        messages.set(e.id, { text: t, atMs: typeof e.timestamp === "string" ? Date.parse(e.timestamp) || 0 : 0 });
    } else if (e.type === "custom" && e.customType === PI_DELIVERY_ENTRY) {
      const d = e.data as { deliveryId?: unknown; entryId?: unknown } | undefined;
      if (typeof d?.deliveryId === "string" && typeof d.entryId === "string")
        bindings.push({ deliveryId: d.deliveryId, entryId: d.entryId });
    }
  }
  const entries: SessionEntry[] = [];
  for (const b of bindings) {
    const m = messages.get(b.entryId);
    if (!m || entries.some((x) => x.deliveryId === b.deliveryId)) continue;
    entries.push({
      deliveryId: b.deliveryId,
      nativeReceiptId: b.entryId,
      contentFingerprint: contentFingerprint(m.text),
      atMs: m.atMs,
    });
  }
  return { entries, badLines };
}

export async function readPiSessionFile(path: string): Promise<PiSessionFileRead | string> {
  try {
    return parsePiSession(await readFile(path, "utf8"));
  } catch (e) {
    return `the Pi session file ${path} could not be read: ${(e as Error).message}`;
  }
}
