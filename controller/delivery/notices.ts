/**
 * One notice per unresolved receipt to its seat (ADR 0207, VUH-1779/VUH-2196): the
 * worker learns that a message may or may not have reached it and will never be resent.
 * The attempt is counted before it is made; an acknowledged notice is never sent again,
 * and one that never arrived is tried once more (by the next process, or when the seat's
 * agent is back).
 */
import { create } from "@bufbuild/protobuf";
import { and, eq, isNull, lt, ne, or, sql } from "drizzle-orm";
import { AuthoritySchema, DeliverRequestSchema } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { AgentResult, agentResultWire } from "../../shared/verdicts.js";
import { createHash } from "node:crypto";
import { fences, machines, seats, type Fence } from "../db/schema.js";
import { fencesNeedingNotice } from "../journal/fences.js";
import { withSeatTurn } from "./turn.js";
import { joinSeatTurn } from "./turn-join.js";
import type { PipelineDeps } from "./pipeline.js";
import { checkNoticeAuthority } from "./notice-authority.js";
import { leaseHeld } from "../journal/lease-guard.js";

/** The process that opened the fence tries once; the next process may try once more. */
export const MAX_NOTICE_ATTEMPTS = 2;
/** The conversation id notices carry, so a worker can tell them from lead messages. */
export const NOTICE_SENDER = "clankie-notice";

/** A stable UUID-shaped id for the notice of one unresolved delivery. */
export function noticeDeliveryId(originalId: string): string {
  const h = createHash("sha256").update(`clankie-notice:${originalId}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function noticeText(f: Fence): string {
  return [
    `Clankie notice: a message to this seat (delivery ${f.deliveryId}, from conversation ${f.conversationId || "unknown"}, sent ${f.openedAt.toISOString()}) may or may not have reached you.`,
    "It will never be resent. If you received it, act on it once; if you did not, nothing is needed unless you were waiting for it.",
  ].join(" ");
}

export class Notifier {
  private chain: Promise<void> = Promise.resolve();
  /** Seats with a fence whose notice may still be due; a delivery to any other seat costs no sweep. */
  private readonly due = new Set<string>();

  constructor(private readonly deps: PipelineDeps) {}

  /** A fence opened or was resolved on this seat. */
  fenceChanged(seatIdValue: string): void {
    this.due.add(seatIdValue);
  }

  /** The seat just took a delivery: proof its agent answers, so its due notices go now. */
  delivered(seatIdValue: string): void {
    if (this.due.has(seatIdValue)) this.sweep(seatIdValue);
  }

  /**
   * Sends the pending notices (of one seat, or all) in the background. Called when a seat
   * just took a delivery or its agent registered: an agent that lost an answer is often
   * unresponsive, so the notice waits for proof that it answers again.
   */
  sweep(seatIdValue?: string): void {
    this.chain = this.chain
      .then(async () => {
        const pending = await fencesNeedingNotice(this.deps.db, MAX_NOTICE_ATTEMPTS, seatIdValue);
        if (seatIdValue) this.due.delete(seatIdValue);
        else this.due.clear();
        for (const f of pending) this.due.add(f.seatId);
        for (const fence of pending) {
          await this.send(fence).catch((e: Error) =>
            this.deps.logger.warn("notice failed", { deliveryId: fence.deliveryId, error: e.message }),
          );
        }
      })
      .catch((e: Error) => this.deps.logger.warn("notice sweep failed", { error: e.message }));
  }

  idle(): Promise<void> {
    return this.chain;
  }

  private async send(fence: Fence): Promise<void> {
    const { db, agents } = this.deps;
    const [seat] = await db.select().from(seats).where(eq(seats.id, fence.seatId));
    if (!seat?.present) return;
    const [machine] = await db.select().from(machines).where(eq(machines.name, seat.machine));
    if (!machine) return;
    await withSeatTurn(
      this.deps.turns,
      joinSeatTurn(this.deps.turns, {
        seatId: seat.id,
        holder: `${this.deps.instanceId}:notice:${fence.deliveryId}`,
        signal: this.deps.shutdownSignal,
        waitMs: this.deps.seatTurnWaitMs,
      }),
      async (turn) => {
        if (!turn.held) return;
        // No link to the agent yet (it registers before its reverse link is up): nothing can be sent,
        // so no attempt is spent; the sweep on "linked" tries again.
        const conn = agents.get(machine.name, machine.endpoint, machine.agentToken);
        if (!(await conn.connect())) return;
        // Checked inside the seat's turn, so nothing can change the occupant between the check and the send.
        const authority = await checkNoticeAuthority(db, fence.deliveryId, seat);
        if (!authority.ok)
          return void this.deps.logger.info("notice not sent", { deliveryId: fence.deliveryId, why: authority.why });
        // Rule 17: the attempt is claimed atomically, re-checked in the seat's turn: not if acknowledged or
        // resolved meanwhile (another replica sent it), at most once per controller process, and only
        // while this instance's lease is live (ADR 0036): a replica woken from a pause claims nothing.
        const claimed = await db
          .update(fences)
          .set({
            noticeAttempts: sql`${fences.noticeAttempts} + 1`,
            noticeSentAt: this.deps.now(),
            noticeClaimedBy: this.deps.instanceId,
          })
          .where(
            and(
              eq(fences.deliveryId, fence.deliveryId),
              isNull(fences.resolvedAt),
              isNull(fences.noticeAcknowledgedAt),
              lt(fences.noticeAttempts, MAX_NOTICE_ATTEMPTS),
              or(isNull(fences.noticeClaimedBy), ne(fences.noticeClaimedBy, this.deps.instanceId)),
              leaseHeld(this.deps.lease.fence()),
            ),
          )
          .returning({ deliveryId: fences.deliveryId });
        if (claimed.length === 0 || !this.deps.lease.holds()) return;
        const own = this.deps.lease.fence();
        const res = await conn.client.deliver(
          create(DeliverRequestSchema, {
            seatName: seat.name,
            // Fenced at the agent like a delivery (ADR 0043).
            controllerInstance: own.instance,
            controllerEpoch: BigInt(own.epoch),
            // One id per fence: a retried notice that did arrive is recognised by the seat, not stored twice.
            deliveryId: noticeDeliveryId(fence.deliveryId),
            text: noticeText(fence),
            conversationId: NOTICE_SENDER,
            inReplyTo: fence.deliveryId,
            authority: create(AuthoritySchema, {
              ageMs: Math.ceil(performance.now() - authority.checkedAt),
              caller: NOTICE_SENDER,
              occupantId: authority.seat.occupantId,
            }),
          }),
          { timeoutMs: 5_000, signal: this.deps.shutdownSignal },
        );
        const result = agentResultWire.decode(res.result);
        if (
          result === AgentResult.Delivered ||
          result === AgentResult.Queued ||
          result === AgentResult.Started ||
          result === AgentResult.Steered
        ) {
          await db
            .update(fences)
            .set({ noticeAcknowledgedAt: this.deps.now() })
            .where(and(eq(fences.deliveryId, fence.deliveryId), leaseHeld(this.deps.lease.fence())));
          this.deps.onJournalChange();
        }
      },
    );
  }
}
