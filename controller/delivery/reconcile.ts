/**
 * reconcile_seat_call: reads the original receipt in its owning conversation and reports
 * what it proves. It never sends, hires or grants anything. For an unresolved delivery it
 * asks the seat's agent to read the session: the original found there is recorded as
 * delivered (evidence, not a send). `settle: "not_delivered"` abandons an unresolved
 * original as `abandoned-unknown` (ADR 0207, VUH-2358) — unless the session shows it.
 */
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { ReadSessionRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { isUuid } from "../../shared/ids.js";
import { InvalidArgumentError } from "../../shared/errors.js";
import { ReceiptState, isUnresolved } from "../../shared/verdicts.js";
import { machines, seats, settlements } from "../db/schema.js";
import { CallState, findCall, settleCall } from "../journal/call-receipts.js";
import { findDelivery, settleDelivery } from "../journal/delivery-receipts.js";
import type { PipelineDeps } from "./message-seat.js";
import { uncertainBody, type ToolOutcome } from "./result-bodies.js";

export const RECONCILE_SEAT_CALL = "reconcile_seat_call";

export interface ReconcileInput {
  deliveryId?: string | undefined;
  hireId?: string | undefined;
  settle?: "not_delivered" | undefined;
}

type SessionEvidence = { kind: "found"; nativeReceiptId: string } | { kind: "absent" } | { kind: "unreadable"; detail: string };

export async function reconcileSeatCall(deps: PipelineDeps, conversationId: string, input: ReconcileInput): Promise<ToolOutcome> {
  const id = input.deliveryId ?? input.hireId;
  if ((input.deliveryId === undefined) === (input.hireId === undefined)) throw new InvalidArgumentError("give exactly one of deliveryId or hireId");
  if (!id || !isUuid(id)) throw new InvalidArgumentError(`${input.deliveryId !== undefined ? "deliveryId" : "hireId"} must be a UUID`);
  const tool = input.deliveryId !== undefined ? "message_seat" : "hire_agent";
  const noMatch: ToolOutcome = {
    id,
    tool,
    state: "settled",
    isError: true,
    body: { schemaVersion: 1, outcome: "no_matching_receipt", detail: "no receipt with this id exists in this conversation; nothing was changed" },
  };

  const call = await findCall(deps.db, id, conversationId);
  if (!call || call.tool !== tool) return noMatch;
  const delivery = tool === "message_seat" ? await findDelivery(deps.db, id) : undefined;

  if (call.state === CallState.Settled && (!delivery || !isUnresolved(delivery.state))) {
    if (input.settle) {
      return { id, tool, state: "settled", isError: true, body: { schemaVersion: 1, outcome: "refused", reason: "already_settled", deliveryId: id, detail: `this receipt is already settled (${delivery?.state ?? "settled"}); nothing was changed` } };
    }
    if (call.resultExpired || !call.result) {
      return { id, tool, state: "settled", isError: true, body: { schemaVersion: 1, outcome: "expired", deliveryId: id, detail: "this receipt was settled and its result body has expired; it is not replayed" } };
    }
    return { id, tool, state: "settled", isError: false, body: call.result };
  }
  if (!delivery) return { id, tool, state: "uncertain", isError: true, body: call.result ?? uncertainBody(tool, id, "the original's outcome is unknown") };
  if (call.state === CallState.InFlight && input.settle) {
    return { id, tool, state: "uncertain", isError: true, body: { schemaVersion: 1, outcome: "refused", reason: "receipt_in_use", deliveryId: id, detail: "this delivery is still in flight; it cannot be settled yet" } };
  }

  const evidence = await readSession(deps, delivery.seatId, id, delivery.createdAt.getTime());
  const now = deps.now();
  if (evidence.kind === "found") {
    const body = {
      schemaVersion: 1,
      outcome: "delivered",
      deliveryStage: "delivered",
      deliveryId: id,
      seat: delivery.seatId,
      nativeReceiptId: evidence.nativeReceiptId,
      detail: "the original is in the recipient's session; recorded as delivered at reconciliation",
    };
    await deps.db.transaction(async (tx) => {
      await settleDelivery(tx, id, { state: ReceiptState.Delivered, reason: "found_in_session", detail: body.detail, nativeReceiptId: evidence.nativeReceiptId }, now);
      await settleCall(tx, id, CallState.Settled, body, now);
    });
    deps.onJournalChange();
    return { id, tool, state: "settled", isError: false, body };
  }
  if (input.settle === "not_delivered") {
    const body = {
      schemaVersion: 1,
      outcome: "undelivered",
      deliveryStage: "unavailable",
      state: ReceiptState.AbandonedUnknown,
      deliveryId: id,
      seat: delivery.seatId,
      detail: "settled by the lead as not delivered; the original is kept as abandoned-unknown evidence and is never resent",
    };
    await deps.db.transaction(async (tx) => {
      await settleDelivery(tx, id, { state: ReceiptState.AbandonedUnknown, reason: "lead_settled_not_delivered", detail: body.detail }, now);
      await tx.insert(settlements).values({
        deliveryId: id,
        disposition: ReceiptState.AbandonedUnknown,
        settledBy: "lead",
        conversationId,
        evidence: { previousState: delivery.state, session: evidence.kind, ...(evidence.kind === "unreadable" ? { sessionDetail: evidence.detail } : {}) },
        at: now,
      });
      await settleCall(tx, id, CallState.Settled, body, now);
    });
    deps.onJournalChange();
    return { id, tool, state: "settled", isError: false, body };
  }
  const detail =
    evidence.kind === "absent"
      ? "the recipient's session was read and does not hold the original; its fate is still unknown and it will not be resent"
      : `the recipient's session could not be read (${evidence.detail}); the original's fate is unknown and it will not be resent`;
  return { id, tool, state: "uncertain", isError: true, body: { ...uncertainBody(tool, id, detail), seat: delivery.seatId, receiptState: delivery.state } };
}

async function readSession(deps: PipelineDeps, seatIdValue: string, deliveryId: string, sinceMs: number): Promise<SessionEvidence> {
  const [seat] = await deps.db.select().from(seats).where(eq(seats.id, seatIdValue));
  if (!seat) return { kind: "unreadable", detail: "the seat is no longer registered" };
  const [machine] = await deps.db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine) return { kind: "unreadable", detail: "the seat's machine is no longer registered" };
  try {
    const conn = deps.agents.get(machine.name, machine.endpoint, machine.agentToken);
    const res = await conn.client.readSession(create(ReadSessionRequestSchema, { seatName: seat.name, sinceUnixMs: BigInt(Math.max(0, sinceMs - 60_000)) }), { timeoutMs: 10_000 });
    const hit = res.entries.find((e) => e.deliveryId === deliveryId);
    if (hit) return { kind: "found", nativeReceiptId: hit.nativeReceiptId };
    return res.complete ? { kind: "absent" } : { kind: "unreadable", detail: "the session was read only in part" };
  } catch (e) {
    return { kind: "unreadable", detail: (e as Error).message };
  }
}
