/**
 * `clankie receipts list|show` (issue 37 item 2): the delivery receipts' history from the status
 * service the dashboard reads, filtered and paged by key as kubectl pages (`--limit`, and the
 * previous page's token as `--page-token`), and one receipt with its proofs, fence and settlements.
 */
import { create } from "@bufbuild/protobuf";
import { GetReceiptRequestSchema, ListReceiptsRequestSchema, type ReceiptRow } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { ReceiptState } from "../../shared/verdicts.js";
import { visibleInline } from "../../shared/terminal-text.js";
import { ownerClients } from "./owner-client.js";
import { emit, table, type OutputOptions } from "./output.js";

export interface ReceiptFilters {
  seat?: string | undefined;
  conversation?: string | undefined;
  state?: string | undefined;
  since?: string | undefined;
  unresolved?: boolean | undefined;
  limit?: string | undefined;
  pageToken?: string | undefined;
}

const STATES: readonly string[] = Object.values(ReceiptState);
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: a duration back from now (90s, 15m, 2h, 7d) or a time (2026-12-05, 2026-12-05T10:00:00Z). */
export function parseSince(text: string, now: number): number {
  const d = /^(\d+)(s|m|h|d)$/.exec(text.trim());
  if (d) return now - Number(d[1]) * UNITS[d[2]!]!;
  const at = /^\d{4}-\d{2}-\d{2}/.test(text.trim()) ? Date.parse(text.trim()) : NaN;
  if (Number.isNaN(at)) throw new InvalidArgumentError(`--since must be a duration (90s, 15m, 2h, 7d) or a time (2026-12-05T10:00:00Z), got ${JSON.stringify(text)}`);
  return at;
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return 50;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError(`--limit must be an integer 1-1000, got ${text}`);
  return n;
}

/** "42 s", "7 m", "3 h", "2 d": ages read at a glance. */
export function age(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} m`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

const rowOf = (r: ReceiptRow) => ({
  id: r.deliveryId,
  seat: r.seatId,
  conversation: r.conversationId,
  state: r.state,
  createdAt: new Date(Number(r.createdAtUnixMs)).toISOString(),
  ageMs: Number(r.ageMs),
  latencyMs: Number(r.latencyMs),
  detail: r.detail,
});

export async function receiptsList(stateDir: string, controller: string | undefined, f: ReceiptFilters, out: OutputOptions): Promise<void> {
  if (f.state && !STATES.includes(f.state)) throw new InvalidArgumentError(`--state must be one of ${STATES.join(", ")}; got ${JSON.stringify(f.state)}`);
  const limit = parseLimit(f.limit);
  const sinceUnixMs = f.since ? BigInt(parseSince(f.since, Date.now())) : 0n;
  const { status } = ownerClients(stateDir, controller);
  const res = await status.listReceipts(
    create(ListReceiptsRequestSchema, { limit, seatId: f.seat ?? "", conversationId: f.conversation ?? "", state: f.state ?? "", unresolvedOnly: f.unresolved ?? false, sinceUnixMs, pageToken: f.pageToken ?? "" }),
  );
  const rows = res.receipts.map(rowOf);
  emit(out, { receipts: rows, total: res.total, nextPageToken: res.nextPageToken }, () => {
    if (rows.length === 0) return f.pageToken ? "no more receipts" : "no receipts match (clankie receipts list --help shows the filters)";
    const shown = table(rows.map((r) => ({ ...r, age: age(r.ageMs) })), ["id", "seat", "conversation", "state", "age"]);
    const more = res.nextPageToken ? `\n(${res.total} match; next page: the same command with --page-token ${res.nextPageToken})` : "";
    return `${shown}${more}`;
  });
}

export async function receiptsShow(stateDir: string, controller: string | undefined, id: string, out: OutputOptions): Promise<void> {
  const { status } = ownerClients(stateDir, controller);
  const res = await status.getReceipt(create(GetReceiptRequestSchema, { deliveryId: id }));
  const r = res.receipt ? rowOf(res.receipt) : undefined;
  const fence = res.fence?.present
    ? { open: res.fence.open, openedAgeMs: Number(res.fence.openedAgeMs), disposition: res.fence.disposition, noticeAttempts: res.fence.noticeAttempts, noticeAcknowledged: res.fence.noticeAcknowledged }
    : null;
  const proofs = res.proofs.map((p) => ({ kind: p.kind, outcome: p.outcome, ageAtWriteMs: p.ageAtWriteMs, detail: p.detail }));
  const settlements = res.settlements.map((s) => ({ disposition: s.disposition, settledBy: s.settledBy, ageMs: Number(s.ageMs), evidence: JSON.parse(s.evidenceJson || "{}") as unknown }));
  const native = { receiptId: res.receipt?.nativeReceiptId ?? "", messageId: res.receipt?.nativeMessageId ?? "", sessionPath: res.receipt?.nativeSessionPath ?? "" };
  emit(out, { receipt: r, reason: res.reason, native, proofs, fence, settlements }, () => {
    const v = visibleInline;
    const lines = [
      `receipt ${v(id)}`,
      `  seat:          ${v(r?.seat ?? "")}`,
      `  conversation:  ${v(r?.conversation ?? "")}`,
      `  state:         ${v(r?.state ?? "")}${res.reason ? ` (${v(res.reason)})` : ""}`,
      ...(r?.detail ? [`  detail:        ${v(r.detail)}`] : []),
      `  created:       ${r?.createdAt ?? ""} (${age(r?.ageMs ?? 0)} ago)${r?.latencyMs ? `, settled after ${r.latencyMs} ms` : ""}`,
      ...(native.receiptId || native.messageId ? [`  native:        ${v([native.receiptId, native.messageId, native.sessionPath].filter(Boolean).join("  "))}`] : []),
      "",
      "proofs:",
      proofs.length ? indent(table(proofs.map((p) => ({ ...p, ageAtWrite: `${p.ageAtWriteMs} ms` })), ["kind", "outcome", "ageAtWrite", "detail"])) : "  (none recorded)",
      "",
      `fence: ${fence ? `${fence.open ? `open for ${age(fence.openedAgeMs)}` : `resolved ${v(fence.disposition)}`}, notice sent ${fence.noticeAttempts} time(s)${fence.noticeAcknowledged ? ", acknowledged" : ""}` : "none (settled definitely at once)"}`,
      "",
      "settlements:",
      settlements.length ? indent(table(settlements.map((s) => ({ disposition: s.disposition, by: s.settledBy, age: age(s.ageMs), evidence: JSON.stringify(s.evidence) })), ["disposition", "by", "age", "evidence"])) : "  (none)",
    ];
    return lines.join("\n");
  });
}

const indent = (text: string) => text.split("\n").map((l) => `  ${l}`).join("\n");
