/**
 * The owner's view of hires (issue 37 item 3): each hire receipt with the agent's answer kept in
 * its call receipt — the pane, the seat, how the brief went in, and the readiness proofs the
 * agent had when it called the seat ready. Request text is never kept, so none is shown.
 */
import { create } from "@bufbuild/protobuf";
import { desc, eq, inArray } from "drizzle-orm";
import { HireRowSchema, ReceiptProofSchema, type HireRow } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import type { HireBody } from "../../shared/delivery-bodies.js";
import type { Db } from "../db/open.js";
import { callReceipts, hireReceipts } from "../db/schema.js";
import { UNRESOLVED_HIRE_STATES } from "../hire/bodies.js";

export const HIRES_DEFAULT = 50;
export const HIRES_MAX = 200;

export async function listHires(
  db: Db,
  o: { limit: number; unresolvedOnly: boolean },
  now: number,
): Promise<HireRow[]> {
  const limit = Math.min(o.limit || HIRES_DEFAULT, HIRES_MAX);
  const rows = await db
    .select({ hire: hireReceipts, result: callReceipts.result })
    .from(hireReceipts)
    // The call receipt shares the hire's id; retention may have dropped its body (result null).
    .leftJoin(callReceipts, eq(callReceipts.id, hireReceipts.id))
    .where(o.unresolvedOnly ? inArray(hireReceipts.state, [...UNRESOLVED_HIRE_STATES]) : undefined)
    .orderBy(desc(hireReceipts.createdAt))
    .limit(limit);
  return rows.map(({ hire, result }) => hireRow(hire, (result ?? {}) as Partial<HireBody>, now));
}

function hireRow(h: typeof hireReceipts.$inferSelect, body: Partial<HireBody>, now: number): HireRow {
  return create(HireRowSchema, {
    hireId: h.id,
    conversationId: h.conversationId,
    machine: h.machine,
    harness: h.harness,
    state: h.state,
    reason: h.reason ?? "",
    seatId: h.seatId ?? body.seat ?? "",
    paneId: h.paneId ?? body.paneId ?? "",
    ageMs: BigInt(Math.max(0, now - h.createdAt.getTime())),
    createdAtUnixMs: BigInt(h.createdAt.getTime()),
    detail: typeof body.detail === "string" ? body.detail : "",
    readinessProofs: (Array.isArray(body.proofs) ? body.proofs : []).map((p) =>
      create(ReceiptProofSchema, {
        kind: p.kind,
        outcome: p.outcome,
        detail: p.detail,
        ageAtWriteMs: Math.max(0, Math.round(p.ageAtWriteMs ?? 0)),
      }),
    ),
    // The agent names no mechanism for a hire without a brief.
    briefMechanism: body.brief?.mechanism ?? (h.state === "spawned" ? "none" : ""),
    briefDeliveryId: body.brief?.deliveryId ?? "",
    unresolved: (UNRESOLVED_HIRE_STATES as readonly string[]).includes(h.state),
    controlFix: body.control?.fix ?? "",
  });
}
