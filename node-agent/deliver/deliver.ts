/**
 * One delivery on the agent: find the seat, prove it through the freshness gate, check
 * the occupant and the delivery mode, write through the seat's native channel, and report
 * the verdict with every proof's age at the write. The pipeline knows no harness; adapters
 * do the native parts.
 */
import { AgentResult, type DeliveryMode } from "../../shared/verdicts.js";
import type { AdapterRegistry } from "../harnesses/registry.js";
import type { NativeStage, SeatSnapshot } from "../harnesses/adapter.js";
import type { SeatBook } from "../seats/seat-book.js";
import {
  judgeFreshness,
  passGate,
  sleep,
  FRESHNESS_LIMIT_MS,
  MAX_PROOF_ATTEMPTS,
  type AuthorityStamp,
} from "../proofs/freshness.js";
import type { MonotonicClock, ProofFact } from "../proofs/proof.js";

export { MAX_PROOF_ATTEMPTS };

export interface DeliverCommand {
  seatName: string;
  deliveryId: string;
  text: string;
  mode: DeliveryMode;
  conversationId: string;
  inReplyTo?: string | undefined;
  /** The occupant the controller checked; empty when it checked none. */
  occupantId: string;
  authorityAgeMs: number;
  arrivedAtMs: number;
  /** The link's transit bound when the request arrived; absent: the unmeasured default. */
  transitBoundMs?: number | undefined;
}

export interface ProofAtWrite {
  kind: string;
  outcome: string;
  detail: string;
  ageAtWriteMs: number;
}

export interface DeliverVerdict {
  result: AgentResult;
  nativeReceiptId?: string | undefined;
  /** Rule 42's fence fields, where the harness has them (Pi). */
  nativeMessageId?: string | undefined;
  nativeSessionPath?: string | undefined;
  detail: string;
  reason?: string | undefined;
  /** Every proof, the controller's authority included, with its age at the write (or at the refusal). */
  proofs: ProofAtWrite[];
  /** Age of the oldest proof at that instant. */
  proofAgeMs: number;
  replayed: boolean;
  /** The harness's own stage for this write, when it defines one (rule 41). */
  deliveryStage?: NativeStage | undefined;
}

export interface DeliverDeps {
  seats: SeatBook;
  adapters: AdapterRegistry;
  clock: MonotonicClock;
  /** Waits on `clock`; defaults to a real timer. Gate tests inject a virtual one. */
  wait?: ((ms: number) => Promise<void>) | undefined;
}

/** Ages at this instant; the oldest is the proof age. */
function evidence(clock: MonotonicClock, proofs: ProofFact[]): { proofs: ProofAtWrite[]; proofAgeMs: number } {
  const now = clock.nowMs();
  const atWrite = proofs.map((p) => ({
    kind: p.kind,
    outcome: p.outcome,
    detail: p.detail,
    ageAtWriteMs: Math.round(now - p.completedAtMs),
  }));
  return { proofs: atWrite, proofAgeMs: atWrite.reduce((m, p) => Math.max(m, p.ageAtWriteMs), 0) };
}

function notSent(
  reason: string,
  detail: string,
  ev: { proofs: ProofAtWrite[]; proofAgeMs: number } = { proofs: [], proofAgeMs: 0 },
): DeliverVerdict {
  return { result: AgentResult.NotSent, reason, detail, ...ev, replayed: false };
}

export async function deliver(deps: DeliverDeps, cmd: DeliverCommand): Promise<DeliverVerdict> {
  const seat = deps.seats.get(cmd.seatName);
  if (!seat) return notSent("unknown_seat", `this agent hosts no seat named ${cmd.seatName}`);
  const adapter = deps.adapters.get(seat.kind);
  if (!adapter) return notSent("unsupported_harness", `no adapter for ${seat.kind} seats on this agent`);
  const authority: AuthorityStamp = {
    ageMs: cmd.authorityAgeMs,
    arrivedAtMs: cmd.arrivedAtMs,
    transitBoundMs: cmd.transitBoundMs,
  };

  let snapshot: SeatSnapshot | undefined;
  const gate = await passGate({
    clock: deps.clock,
    wait: deps.wait ?? sleep,
    authority,
    readers: [
      {
        name: seat.kind,
        read: async () => {
          const inspected = await adapter.inspect(seat);
          snapshot = inspected.snapshot;
          return inspected.proofs;
        },
      },
    ],
  });
  // The harness's own "cannot take a turn" refuses the write whatever the gate says: a refusal needs no fresh authority.
  // An authority already stale on arrival stops the gate before it reads the seat: read it once here for that answer.
  if (!gate.pass && !snapshot)
    snapshot = await adapter.inspect(seat).then(
      (i) => i.snapshot,
      () => undefined,
    );
  const cannot = snapshot?.cannotWork && (!cmd.occupantId || snapshot.occupantId === cmd.occupantId);
  if (!gate.pass && !cannot) return notSent(gate.reason, gate.detail, evidence(deps.clock, gate.proofs));
  if (!snapshot) return notSent("proof_unknown", "the seat was not observed");
  if (cmd.occupantId && snapshot.occupantId !== cmd.occupantId) {
    return notSent(
      "occupant_changed",
      "the seat has a different occupant than the controller checked",
      evidence(deps.clock, gate.proofs),
    );
  }
  if (snapshot.cannotWork) {
    // The harness itself says it would refuse a turn (issue 35): a message would sit there unread.
    return {
      result: AgentResult.Rejected,
      reason: "seat_cannot_work",
      detail: `this ${seat.kind} seat cannot take a turn (${snapshot.cannotWork.reason}: ${snapshot.cannotWork.detail}); nothing was written`,
      ...evidence(deps.clock, gate.proofs),
      replayed: false,
    };
  }
  if (cmd.mode !== "auto" && !snapshot.inputCapabilities.deliveryModes.includes(cmd.mode)) {
    const modes = snapshot.inputCapabilities.deliveryModes;
    return {
      result: AgentResult.Rejected,
      reason: "delivery_mode_unsupported",
      detail: `this ${seat.kind} seat offers ${modes.length ? modes.join(", ") : "no explicit delivery modes"}; nothing was written`,
      ...evidence(deps.clock, gate.proofs),
      replayed: false,
    };
  }
  // The last instant before the write: the gate's pass must still hold here.
  const final = judgeFreshness(deps.clock, gate.proofs, undefined);
  const atWrite = evidence(deps.clock, gate.proofs);
  if (!final.pass) {
    return notSent(
      "proof_stale",
      `the oldest proof (${final.oldestKind}) was ${Math.round(final.oldestAgeMs)} ms old at the write, over the ${FRESHNESS_LIMIT_MS} ms limit`,
      atWrite,
    );
  }
  try {
    const written = await adapter.write(seat, {
      deliveryId: cmd.deliveryId,
      text: cmd.text,
      mode: cmd.mode,
      conversationId: cmd.conversationId,
      inReplyTo: cmd.inReplyTo,
    });
    return {
      result: written.result,
      nativeReceiptId: written.nativeReceiptId,
      nativeMessageId: written.nativeMessageId,
      nativeSessionPath: written.nativeSessionPath,
      detail: written.detail ?? "",
      reason: written.reason,
      ...atWrite,
      replayed: written.replayed ?? false,
      ...(written.deliveryStage ? { deliveryStage: written.deliveryStage } : {}),
    };
  } catch (e) {
    // The write was attempted: it may have happened. Never retried here.
    return {
      result: AgentResult.Unconfirmed,
      reason: "write_failed",
      detail: `native write failed after it began: ${(e as Error).message}`,
      ...atWrite,
      replayed: false,
    };
  }
}
