/**
 * Peer messages between a fleet's workers (rule 49, scenarios 23–24), the controller's half.
 * Off until the owner turns them on. The sender is a bound seat (its agent proved the pane,
 * its binding names the current occupant); the message goes through the ordinary delivery
 * pipeline under the sender's own peer conversation `peer:<seat id>`, so it has its own call
 * receipt, fence and `previous`, carries no owner authority, and never routes a report or
 * wakes a lead (reports follow lead conversations only). A recipient that is gone is a refusal.
 */
import { and, eq } from "drizzle-orm";
import { deliveryReceipts, fleetSettings, seats } from "../db/schema.js";
import type { Db } from "../db/open.js";
import { seatId } from "../../shared/ids.js";
import { messageSeat } from "../delivery/message-seat.js";
import type { PipelineDeps } from "../delivery/pipeline.js";
import { reconcileSeatCall } from "../delivery/reconcile.js";
import type { ToolOutcome } from "../delivery/result-bodies.js";
import { bindingOf } from "./inbound.js";

/** This controller serves one fleet; its settings row. */
export const FLEET = "default";
export const PEER_CONVERSATION_PREFIX = "peer:";

export function peerConversation(senderSeatId: string): string {
  return `${PEER_CONVERSATION_PREFIX}${senderSeatId}`;
}

export async function peersEnabled(db: Db): Promise<boolean> {
  const [row] = await db
    .select({ on: fleetSettings.peerMessages })
    .from(fleetSettings)
    .where(eq(fleetSettings.fleet, FLEET));
  return row?.on ?? false;
}

export async function setPeersEnabled(db: Db, enabled: boolean, now: Date): Promise<boolean> {
  await db
    .insert(fleetSettings)
    .values({ fleet: FLEET, peerMessages: enabled, updatedAt: now })
    .onConflictDoUpdate({ target: fleetSettings.fleet, set: { peerMessages: enabled, updatedAt: now } });
  return enabled;
}

export type Refusal = {
  refused: true;
  reason: "peers_off" | "binding_stale" | "unknown_seat" | "self";
  detail: string;
};

/** The checks every peer call makes first: peers on, and the sender's binding still current. */
async function admitSender(
  db: Db,
  machine: string,
  seatName: string,
  binding: string,
  requireOn = true,
): Promise<{ senderId: string } | (Refusal & { reason: "peers_off" | "binding_stale" })> {
  if (requireOn && !(await peersEnabled(db)))
    return { refused: true, reason: "peers_off", detail: "the owner has not turned peer messages on for this fleet" };
  const senderId = seatId(machine, seatName);
  const [row] = await db
    .select({ occupantId: seats.occupantId, present: seats.present })
    .from(seats)
    .where(eq(seats.id, senderId));
  if (!row?.present || bindingOf(senderId, row.occupantId) !== binding)
    return {
      refused: true,
      reason: "binding_stale",
      detail: `the binding no longer names seat ${senderId}'s current occupant`,
    };
  return { senderId };
}

export async function listFleetSeats(db: Db, machine: string, seatName: string, binding: string) {
  const admitted = await admitSender(db, machine, seatName, binding);
  if ("refused" in admitted) return admitted;
  const rows = await db
    .select({ id: seats.id, kind: seats.kind, title: seats.title, status: seats.status })
    .from(seats)
    .where(eq(seats.present, true));
  return { refused: false as const, seats: rows.filter((r) => r.id !== admitted.senderId) };
}

export async function sendPeerMessage(
  deps: PipelineDeps,
  m: { machine: string; seatName: string; binding: string; recipient: string; id: string; text: string },
): Promise<ToolOutcome | Refusal> {
  const admitted = await admitSender(deps.db, m.machine, m.seatName, m.binding);
  if ("refused" in admitted) return admitted;
  // Same fleet only: a recipient must be a present seat of this controller's fleet, and not the sender.
  const [recipient] = await deps.db
    .select({ id: seats.id })
    .from(seats)
    .where(
      and(eq(seats.present, true), m.recipient.includes("/") ? eq(seats.id, m.recipient) : eq(seats.name, m.recipient)),
    );
  if (!recipient) return { refused: true, reason: "unknown_seat", detail: `no seat ${m.recipient} in this fleet` };
  if (recipient.id === admitted.senderId)
    return { refused: true, reason: "self", detail: "a seat cannot message itself" };
  // Rule 26: the switch and the binding are read again with the final observation, before the agent call.
  const senderRecheck = async () => {
    const again = await admitSender(deps.db, m.machine, m.seatName, m.binding);
    return "refused" in again ? { reason: again.reason, detail: again.detail } : undefined;
  };
  return messageSeat(
    deps,
    { conversationId: peerConversation(admitted.senderId), deliveryId: m.id, senderRecheck },
    { seat: recipient.id, message: m.text },
  );
}

/**
 * Read-only, and allowed with peers switched off (reconciling grants nothing). An original that
 * is still unresolved while its recipient has gone ends as unconfirmed (recipient_gone): the
 * sender's claim may then clear for new intent, and nothing is resent.
 */
export async function peerMessageStatus(
  deps: PipelineDeps,
  m: { machine: string; seatName: string; binding: string; id: string },
): Promise<ToolOutcome | Refusal> {
  const admitted = await admitSender(deps.db, m.machine, m.seatName, m.binding, false);
  if ("refused" in admitted) return admitted;
  const o = await reconcileSeatCall(deps, peerConversation(admitted.senderId), { deliveryId: m.id });
  if (o.state !== "uncertain" && o.body.outcome !== "uncertain" && o.body.outcome !== "unconfirmed") return o;
  const [delivery] = await deps.db
    .select({ seatId: deliveryReceipts.seatId })
    .from(deliveryReceipts)
    .where(
      and(eq(deliveryReceipts.id, m.id), eq(deliveryReceipts.conversationId, peerConversation(admitted.senderId))),
    );
  const recipient = delivery?.seatId;
  const [row] = recipient
    ? await deps.db.select({ present: seats.present }).from(seats).where(eq(seats.id, recipient))
    : [];
  if (recipient && row?.present) return o;
  return {
    ...o,
    state: "settled",
    body: {
      schemaVersion: 1,
      outcome: "unconfirmed",
      deliveryId: m.id,
      seat: recipient ?? "(unknown)",
      deliveryStage: "uncertain",
      reason: "recipient_gone",
      detail: `the recipient ${recipient ?? "(unknown)"} is gone; whether it got the message is unknown, and it is never resent`,
    },
  };
}
