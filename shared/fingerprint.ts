/**
 * Fingerprints bind a receipt to its request without storing the request text
 * (ADR 0207, VUH-1638): sha256 of the tool and its canonical arguments, and sha256
 * of a message's trimmed, LF-normalised content for fences.
 */
import { createHash } from "node:crypto";

/** JSON with object keys sorted, so equal arguments always hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Fingerprint of an operator call: sha256 of [tool, args]. */
export function callFingerprint(tool: string, args: unknown): string {
  return sha256Hex(canonicalJson([tool, args]));
}

/** Trimmed text with CRLF and CR turned into LF. */
export function normalizeContent(text: string): string {
  return text.replace(/\r\n?/g, "\n").trim();
}

/** Fingerprint of a message's content, as fences compare it. */
export function contentFingerprint(text: string): string {
  return sha256Hex(normalizeContent(text));
}
