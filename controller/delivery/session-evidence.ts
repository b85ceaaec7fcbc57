/**
 * Session evidence: what the seat's own session proves about one delivery id, read through its agent's
 * ReadSession. The settle paths of an unresolved original (settle.ts) act on it; only an exact match
 * counts (rule 30), and anything less is a gap, never a verdict.
 */
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { ReadSessionRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { seatStatusWire, type SeatStatus } from "../../shared/verdicts.js";
import type { Db } from "../db/open.js";
import { machines, seats } from "../db/schema.js";
import type { AgentClients } from "../nodes/agent-clients.js";

/** What a seat's session proves about one delivery id, read through its agent's ReadSession. */
export type SessionEvidence =
  | { kind: "found"; nativeReceiptId: string; status: SeatStatus }
  /** `writeTurn`: the turn the original's write joined or waited behind (rule 39), where the harness has turn ids. */
  | { kind: "absent"; status: SeatStatus; writeTurn?: "terminal" | "active" | "unknown" }
  | { kind: "unreadable"; detail: string };

/** What the original was: an entry under its id counts only when it matches (rule 30). */
export interface OriginalCheck {
  contentFingerprint: string;
  /** The occupant the original was admitted for; null on receipts older than the column. */
  occupantId?: string | null | undefined;
  /** Rule 42: the native message id and session file the write was answered with (Pi); null when unknown. */
  nativeMessageId?: string | null | undefined;
  nativeSessionPath?: string | null | undefined;
}

/**
 * Reads the session; a partial read or any failure is a gap, never a verdict. Rule 30: an
 * entry is the original only under its exact id, with the original's content, read from the
 * occupant the controller knows for this seat, which must be the occupant the original was
 * admitted for (the recipient binding is the seat read). A
 * matching body under another id never counts, and a mismatch is a gap, not an absence.
 */
export async function sessionEvidence(
  db: Db,
  agents: AgentClients,
  seatIdValue: string,
  deliveryId: string,
  sinceMs: number,
  original?: OriginalCheck,
): Promise<SessionEvidence> {
  const [seat] = await db.select().from(seats).where(eq(seats.id, seatIdValue));
  if (!seat) return { kind: "unreadable", detail: "the seat is no longer registered" };
  const [machine] = await db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine) return { kind: "unreadable", detail: "the seat's machine is no longer registered" };
  try {
    const conn = agents.get(machine.name, machine.endpoint, machine.agentToken);
    const res = await conn.client.readSession(
      create(ReadSessionRequestSchema, {
        seatName: seat.name,
        sinceUnixMs: BigInt(Math.max(0, sinceMs - 60_000)),
        deliveryId,
      }),
      { timeoutMs: 10_000 },
    );
    const status = seatStatusWire.decode(res.status) ?? "unknown";
    if (res.occupantId && res.occupantId !== seat.occupantId)
      return {
        kind: "unreadable",
        detail: `the session read belongs to occupant ${res.occupantId}, not ${seat.occupantId}`,
      };
    // A later occupant's session is not the recipient's: it proves neither presence nor absence.
    const wrote = original?.occupantId;
    if (wrote && wrote !== (res.occupantId || seat.occupantId)) {
      return {
        kind: "unreadable",
        detail: `the original was written to occupant ${wrote}; the seat now has occupant ${res.occupantId || seat.occupantId}, whose session proves nothing about it`,
      };
    }
    // A mailbox written before ids were canonical may name it in upper case (issue 32 item 4).
    const hit = res.entries.find((e) => e.deliveryId.toLowerCase() === deliveryId.toLowerCase());
    if (hit && original && hit.contentFingerprint !== original.contentFingerprint) {
      return { kind: "unreadable", detail: "the session holds this id with other content: it is not the original" };
    }
    // Rule 42: a receipt that kept its native message id and session file is found only at that entry in that file.
    if (hit && original?.nativeSessionPath && res.sessionPath !== original.nativeSessionPath) {
      return {
        kind: "unreadable",
        detail: `the session read was ${res.sessionPath || "not a session file"}, not the recorded ${original.nativeSessionPath}`,
      };
    }
    if (hit && original?.nativeMessageId && hit.nativeReceiptId !== original.nativeMessageId) {
      return {
        kind: "unreadable",
        detail: `the session holds this delivery under entry ${hit.nativeReceiptId}, not the recorded ${original.nativeMessageId}: it is not the original`,
      };
    }
    if (hit) return { kind: "found", nativeReceiptId: hit.nativeReceiptId, status };
    const writeTurn =
      res.writeTurn === "terminal" || res.writeTurn === "active"
        ? res.writeTurn
        : res.writeTurn
          ? "unknown"
          : undefined;
    return res.complete
      ? { kind: "absent", status, ...(writeTurn ? { writeTurn } : {}) }
      : { kind: "unreadable", detail: "the session was read only in part" };
  } catch (e) {
    return { kind: "unreadable", detail: (e as Error).message };
  }
}
