/**
 * Mailbox seats: the message is written durably into an inbox on this machine, which the
 * worker reads itself. Storage grants no native modes: plain Send only (inventory rule 44).
 */
import { AgentResult, SeatKind, SeatStatus } from "../../../shared/verdicts.js";
import type { MonotonicClock, ProofFact } from "../../proofs/proof.js";
import { MailboxFencedError, type MailboxStore } from "../../mailbox/store.js";
import { MailboxSessionReader } from "../../mailbox/session-read.js";
import type {
  HarnessAdapter,
  NativeWrite,
  NativeWriteResult,
  SeatRecord,
  SeatSnapshot,
  SessionRead,
} from "../adapter.js";

export class MailboxAdapter implements HarnessAdapter {
  readonly kind = SeatKind.Mailbox;
  private readonly sessions: MailboxSessionReader;

  constructor(
    private readonly store: MailboxStore,
    private readonly clock: MonotonicClock,
  ) {
    this.sessions = new MailboxSessionReader(store);
  }

  async inspect(seat: SeatRecord): Promise<{ snapshot: SeatSnapshot; proofs: ProofFact[] }> {
    const present = this.store.exists(seat.name);
    const proofs: ProofFact[] = [
      {
        kind: "mailbox_present",
        outcome: present ? "proven" : "refuted",
        detail: present ? `inbox ${this.store.dir(seat.name)}` : "the inbox directory is missing",
        completedAtMs: this.clock.nowMs(),
      },
    ];
    return {
      snapshot: {
        status: present ? SeatStatus.Idle : SeatStatus.Offline,
        occupantId: seat.occupantId,
        inputCapabilities: { deliveryModes: [], interrupt: false, nextTurnOnly: false },
      },
      proofs,
    };
  }

  async write(seat: SeatRecord, message: NativeWrite): Promise<NativeWriteResult> {
    let appended;
    try {
      appended = await this.store.append(seat.name, {
        deliveryId: message.deliveryId,
        text: message.text,
        conversationId: message.conversationId,
        inReplyTo: message.inReplyTo,
      });
    } catch (e) {
      // Reconcile proved this id absent and settled it not sent: it must stay unwritten.
      if (e instanceof MailboxFencedError) {
        return { result: AgentResult.NotSent, reason: "fenced_by_reconcile", detail: e.message };
      }
      throw e;
    }
    const { entry, replayed } = appended;
    return {
      result: AgentResult.Delivered,
      nativeReceiptId: `${seat.name}#${entry.seq}`,
      detail: replayed ? "already in the mailbox; not written again" : "stored durably in the mailbox",
      replayed,
    };
  }

  async readSession(seat: SeatRecord, sinceMs: number): Promise<SessionRead> {
    const { entries, unreadable } = await this.sessions.read(seat.name);
    return {
      occupantId: seat.occupantId,
      status: SeatStatus.Idle,
      complete: unreadable.length === 0,
      entries: entries
        .filter((e) => e.receivedAtMs >= sinceMs)
        .map((e) => ({
          deliveryId: e.deliveryId,
          nativeReceiptId: `${seat.name}#${e.seq}`,
          contentFingerprint: e.contentFingerprint,
          atMs: e.receivedAtMs,
        })),
    };
  }
}
