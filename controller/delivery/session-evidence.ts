/** What a seat's session proves about one delivery id, read through its agent's ReadSession. */
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { ReadSessionRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { seatStatusWire, type SeatStatus } from "../../shared/verdicts.js";
import { machines, seats } from "../db/schema.js";
import type { Db } from "../db/open.js";
import type { AgentClients } from "../nodes/agent-clients.js";

export type SessionEvidence =
  | { kind: "found"; nativeReceiptId: string; status: SeatStatus }
  | { kind: "absent"; status: SeatStatus }
  | { kind: "unreadable"; detail: string };

/** Reads the session; a partial read or any failure is a gap, never a verdict. */
export async function sessionEvidence(db: Db, agents: AgentClients, seatIdValue: string, deliveryId: string, sinceMs: number): Promise<SessionEvidence> {
  const [seat] = await db.select().from(seats).where(eq(seats.id, seatIdValue));
  if (!seat) return { kind: "unreadable", detail: "the seat is no longer registered" };
  const [machine] = await db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine) return { kind: "unreadable", detail: "the seat's machine is no longer registered" };
  try {
    const conn = agents.get(machine.name, machine.endpoint, machine.agentToken);
    const res = await conn.client.readSession(create(ReadSessionRequestSchema, { seatName: seat.name, sinceUnixMs: BigInt(Math.max(0, sinceMs - 60_000)) }), { timeoutMs: 10_000 });
    const status = seatStatusWire.decode(res.status) ?? "unknown";
    const hit = res.entries.find((e) => e.deliveryId === deliveryId);
    if (hit) return { kind: "found", nativeReceiptId: hit.nativeReceiptId, status };
    return res.complete ? { kind: "absent", status } : { kind: "unreadable", detail: "the session was read only in part" };
  } catch (e) {
    return { kind: "unreadable", detail: (e as Error).message };
  }
}
