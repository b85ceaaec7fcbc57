/**
 * `clankie receipts list|show` (issue 37 item 2): the delivery receipts' history from the status
 * service the dashboard reads, filtered and paged by key as kubectl pages (`--limit`, and the
 * previous page's token as `--page-token`), and one receipt with its proofs, fence and settlements.
 */
import { create } from "@bufbuild/protobuf";
import {
  GetReceiptRequestSchema,
  ListReceiptsRequestSchema,
  type GetReceiptResponse,
  type ReceiptRow,
} from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { ErrorCode, FleetError, InvalidArgumentError } from "../shared/errors.js";
import { ReceiptState } from "../shared/verdicts.js";
import { visibleInline } from "../shared/terminal-text.js";
import { ownerClients } from "../shared/owner-client.js";
import { emit, table, type OutputOptions } from "./output.js";

export interface ReceiptFilters {
  id?: string | undefined;
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
  if (Number.isNaN(at)) {
    const want = "a duration (90s, 15m, 2h, 7d) or a time (2026-12-05T10:00:00Z)";
    throw new InvalidArgumentError(`--since must be ${want}, got ${JSON.stringify(text)}`);
  }
  return at;
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return 50;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 1000) {
    throw new InvalidArgumentError(`--limit must be an integer 1-1000, got ${text}`);
  }
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

export async function receiptsList(
  stateDir: string,
  controller: string | undefined,
  f: ReceiptFilters,
  out: OutputOptions,
): Promise<void> {
  if (f.state && !STATES.includes(f.state)) {
    throw new InvalidArgumentError(`--state must be one of ${STATES.join(", ")}; got ${JSON.stringify(f.state)}`);
  }
  const limit = parseLimit(f.limit);
  const sinceUnixMs = f.since ? BigInt(parseSince(f.since, Date.now())) : 0n;
  const { status } = ownerClients(stateDir, controller);
  const req = create(ListReceiptsRequestSchema, {
    limit,
    seatId: f.seat ?? "",
    conversationId: f.conversation ?? "",
    state: f.state ?? "",
    unresolvedOnly: f.unresolved ?? false,
    sinceUnixMs,
    pageToken: f.pageToken ?? "",
    deliveryIdPrefix: f.id ?? "",
  });
  const res = await status.listReceipts(req);
  const rows = res.receipts.map(rowOf);
  emit(out, { receipts: rows, total: res.total, nextPageToken: res.nextPageToken }, () => {
    if (rows.length === 0 && f.pageToken) return "no more receipts";
    if (rows.length === 0) return "no receipts match (clankie receipts list --help shows the filters)";
    const shown = table(
      rows.map((r) => ({ ...r, age: age(r.ageMs) })),
      ["id", "seat", "conversation", "state", "age"],
    );
    if (!res.nextPageToken) return shown;
    return `${shown}\n(${res.total} match; next page: the same command with --page-token ${res.nextPageToken})`;
  });
}

/** The detail as one plain document: numbers, not bigints; the evidence parsed. */
function detailOf(res: GetReceiptResponse) {
  const f = res.fence;
  const fence = f?.present
    ? {
        open: f.open,
        openedAgeMs: Number(f.openedAgeMs),
        disposition: f.disposition,
        noticeAttempts: f.noticeAttempts,
        noticeAcknowledged: f.noticeAcknowledged,
      }
    : null;
  const proofs = res.proofs.map((p) => ({
    kind: p.kind,
    outcome: p.outcome,
    ageAtWriteMs: p.ageAtWriteMs,
    detail: p.detail,
  }));
  const settlements = res.settlements.map((s) => ({
    disposition: s.disposition,
    settledBy: s.settledBy,
    ageMs: Number(s.ageMs),
    evidence: JSON.parse(s.evidenceJson || "{}") as unknown,
  }));
  const r = res.receipt;
  const native = {
    receiptId: r?.nativeReceiptId ?? "",
    messageId: r?.nativeMessageId ?? "",
    sessionPath: r?.nativeSessionPath ?? "",
  };
  return { receipt: r ? rowOf(r) : undefined, reason: res.reason, native, proofs, fence, settlements };
}

function fenceLine(fence: ReturnType<typeof detailOf>["fence"]): string {
  if (!fence) return "none (settled definitely at once)";
  const state = fence.open ? `open for ${age(fence.openedAgeMs)}` : `resolved ${visibleInline(fence.disposition)}`;
  return `${state}, notice sent ${fence.noticeAttempts} time(s)${fence.noticeAcknowledged ? ", acknowledged" : ""}`;
}

function showText(id: string, d: ReturnType<typeof detailOf>): string {
  const v = visibleInline;
  const r = d.receipt;
  const latency = r?.latencyMs ? `, settled after ${r.latencyMs} ms` : "";
  const native = [d.native.receiptId, d.native.messageId, d.native.sessionPath].filter(Boolean).join("  ");
  const proofRows = d.proofs.map((p) => ({ ...p, ageAtWrite: `${p.ageAtWriteMs} ms` }));
  const settled = d.settlements.map((s) => ({
    disposition: s.disposition,
    by: s.settledBy,
    age: age(s.ageMs),
    evidence: JSON.stringify(s.evidence),
  }));
  return [
    `receipt ${v(id)}`,
    `  seat:          ${v(r?.seat ?? "")}`,
    `  conversation:  ${v(r?.conversation ?? "")}`,
    `  state:         ${v(r?.state ?? "")}${d.reason ? ` (${v(d.reason)})` : ""}`,
    ...(r?.detail ? [`  detail:        ${v(r.detail)}`] : []),
    `  created:       ${r?.createdAt ?? ""} (${age(r?.ageMs ?? 0)} ago)${latency}`,
    ...(native ? [`  native:        ${v(native)}`] : []),
    "",
    "proofs:",
    proofRows.length ? indent(table(proofRows, ["kind", "outcome", "ageAtWrite", "detail"])) : "  (none recorded)",
    "",
    `fence: ${fenceLine(d.fence)}`,
    "",
    "settlements:",
    settled.length ? indent(table(settled, ["disposition", "by", "age", "evidence"])) : "  (none)",
  ].join("\n");
}

export async function receiptsShow(
  stateDir: string,
  controller: string | undefined,
  id: string,
  out: OutputOptions,
): Promise<void> {
  const { status } = ownerClients(stateDir, controller);
  const get = (deliveryId: string) => status.getReceipt(create(GetReceiptRequestSchema, { deliveryId }));
  let res: GetReceiptResponse;
  try {
    res = await get(id);
  } catch (e) {
    // Not a whole id: the start of one, as Nomad takes an id's first characters, when only one receipt has it.
    if (FleetError.from(e).code !== ErrorCode.NotFound) throw e;
    const starts = await status.listReceipts(create(ListReceiptsRequestSchema, { deliveryIdPrefix: id, limit: 5 }));
    if (starts.receipts.length === 0) throw e;
    if (starts.receipts.length > 1) {
      const some = starts.receipts.map((r) => r.deliveryId).join(", ");
      const what = `${starts.total} receipts start with ${visibleInline(id)} (${some}${starts.total > 5 ? ", …" : ""})`;
      throw new InvalidArgumentError(`${what}; give more of the id`);
    }
    id = starts.receipts[0]!.deliveryId;
    res = await get(id);
  }
  const d = detailOf(res);
  emit(out, d, () => showText(id, d));
}

const indent = (text: string) =>
  text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
