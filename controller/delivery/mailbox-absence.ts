/**
 * Rule 30 for a mailbox seat: the mailbox directory is the session evidence, and its agent is
 * the only writer. When a read found the original absent, the agent is asked to fence the id
 * (FenceMailboxDelivery): it answers that the file exists, that it is writing it now, or that
 * neither is so and it will never write it. Only the last proves "not sent" (issue 32, item 6).
 */
import { create } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { FenceMailboxDeliveryRequestSchema, MailboxFenceState } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { SeatKind } from "../../shared/verdicts.js";
import { machines, seats } from "../db/schema.js";
import type { Db } from "../db/open.js";
import type { AgentClients } from "../nodes/agent-clients.js";

/** What was checked, kept on the receipt and shown to the lead. */
export interface AbsenceProof {
  checked: "mailbox_file";
  machine: string;
  path: string;
  fileExists: false;
  writeInProgress: false;
  /** From then on the agent refuses to write this id (a request still on its way included). */
  fencedAtUnixMs: number;
}

export type MailboxAbsence =
  | { kind: "proven"; proof: AbsenceProof }
  | { kind: "found"; nativeReceiptId: string }
  | { kind: "unproven"; detail: string };

export async function proveMailboxAbsence(
  db: Db,
  agents: AgentClients,
  seatIdValue: string,
  deliveryId: string,
  contentFingerprint: string,
): Promise<MailboxAbsence> {
  const [seat] = await db.select().from(seats).where(eq(seats.id, seatIdValue));
  if (!seat || seat.kind !== SeatKind.Mailbox) return { kind: "unproven", detail: "not a registered mailbox seat" };
  const [machine] = await db.select().from(machines).where(eq(machines.name, seat.machine));
  if (!machine) return { kind: "unproven", detail: "the seat's machine is no longer registered" };
  try {
    const conn = agents.get(machine.name, machine.endpoint, machine.agentToken);
    const request = create(FenceMailboxDeliveryRequestSchema, { seatName: seat.name, deliveryId });
    const res = await conn.client.fenceMailboxDelivery(request, { timeoutMs: 10_000 });
    switch (res.state) {
      case MailboxFenceState.FENCED:
        return {
          kind: "proven",
          proof: {
            checked: "mailbox_file",
            machine: machine.name,
            path: res.path,
            fileExists: false,
            writeInProgress: false,
            fencedAtUnixMs: Number(res.fencedAtUnixMs),
          },
        };
      case MailboxFenceState.FOUND:
        // Rule 30: the entry under this id counts only with the original's content.
        if (res.contentFingerprint !== contentFingerprint) {
          return { kind: "unproven", detail: "the mailbox holds this id with other content: it is not the original" };
        }
        return { kind: "found", nativeReceiptId: res.nativeReceiptId };
      case MailboxFenceState.WRITING:
        return { kind: "unproven", detail: `the agent on ${machine.name} is writing ${res.path} now: fate open` };
      default:
        return { kind: "unproven", detail: "the agent could not say whether a write of it may still run" };
    }
  } catch (e) {
    return { kind: "unproven", detail: `the agent could not fence it: ${(e as Error).message}` };
  }
}
