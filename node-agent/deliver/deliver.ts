/**
 * One delivery on the agent: find the seat, prove it, pass the freshness gate, write
 * through the seat's native channel, and report the verdict with its proof ages. The
 * pipeline knows no harness; adapters do the native parts.
 */
import { AgentResult, type DeliveryMode } from "../../shared/verdicts.js";
import type { AdapterRegistry } from "../harnesses/registry.js";
import type { SeatBook } from "../seats/seat-book.js";
import { judgeFreshness, FRESHNESS_LIMIT_MS } from "../proofs/freshness.js";
import type { MonotonicClock, ProofFact } from "../proofs/proof.js";

/** Proofs re-read at most this many times when they finish too far apart. */
export const MAX_PROOF_ATTEMPTS = 3;

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
  detail: string;
  reason?: string | undefined;
  proofs: ProofAtWrite[];
  proofAgeMs: number;
  replayed: boolean;
}

export interface DeliverDeps {
  seats: SeatBook;
  adapters: AdapterRegistry;
  clock: MonotonicClock;
}

function notSent(reason: string, detail: string, proofs: ProofAtWrite[] = [], proofAgeMs = 0): DeliverVerdict {
  return { result: AgentResult.NotSent, reason, detail, proofs, proofAgeMs, replayed: false };
}

function agesAt(clock: MonotonicClock, proofs: ProofFact[]): ProofAtWrite[] {
  const now = clock.nowMs();
  return proofs.map((p) => ({ kind: p.kind, outcome: p.outcome, detail: p.detail, ageAtWriteMs: Math.round(now - p.completedAtMs) }));
}

export async function deliver(deps: DeliverDeps, cmd: DeliverCommand): Promise<DeliverVerdict> {
  const seat = deps.seats.get(cmd.seatName);
  if (!seat) return notSent("unknown_seat", `this agent hosts no seat named ${cmd.seatName}`);
  const adapter = deps.adapters.get(seat.kind);
  if (!adapter) return notSent("unsupported_harness", `no adapter for ${seat.kind} seats on this agent`);

  for (let attempt = 1; attempt <= MAX_PROOF_ATTEMPTS; attempt++) {
    const { snapshot, proofs } = await adapter.inspect(seat);
    const refuted = proofs.find((p) => p.outcome !== "proven");
    if (refuted) return notSent(`proof_${refuted.outcome}`, `${refuted.kind}: ${refuted.detail}`, agesAt(deps.clock, proofs));
    if (cmd.occupantId && snapshot.occupantId !== cmd.occupantId) {
      return notSent("occupant_changed", "the seat has a different occupant than the controller checked", agesAt(deps.clock, proofs));
    }
    if (cmd.mode !== "auto" && !snapshot.inputCapabilities.deliveryModes.includes(cmd.mode)) {
      return {
        result: AgentResult.Rejected,
        reason: "delivery_mode_unsupported",
        detail: `this ${seat.kind} seat offers ${snapshot.inputCapabilities.deliveryModes.length ? snapshot.inputCapabilities.deliveryModes.join(", ") : "no explicit delivery modes"}; nothing was written`,
        proofs: agesAt(deps.clock, proofs),
        proofAgeMs: 0,
        replayed: false,
      };
    }
    const verdict = judgeFreshness(deps.clock, proofs, { ageMs: cmd.authorityAgeMs, arrivedAtMs: cmd.arrivedAtMs });
    if (!verdict.pass) {
      // Waiting never makes the controller's authority younger: only local proofs are re-read.
      if (verdict.oldestKind === "controller_authority" || attempt === MAX_PROOF_ATTEMPTS) {
        return notSent(
          "proof_stale",
          `oldest proof (${verdict.oldestKind}) was ${Math.round(verdict.oldestAgeMs)} ms old, over the ${FRESHNESS_LIMIT_MS} ms limit, after ${attempt} attempt(s)`,
          agesAt(deps.clock, proofs),
          Math.round(verdict.oldestAgeMs),
        );
      }
      continue;
    }
    const atWrite = agesAt(deps.clock, proofs);
    const proofAgeMs = Math.round(verdict.oldestAgeMs);
    try {
      const written = await adapter.write(seat, { deliveryId: cmd.deliveryId, text: cmd.text, mode: cmd.mode, conversationId: cmd.conversationId, inReplyTo: cmd.inReplyTo });
      return {
        result: written.result,
        nativeReceiptId: written.nativeReceiptId,
        detail: written.detail ?? "",
        reason: written.reason,
        proofs: atWrite,
        proofAgeMs,
        replayed: written.replayed ?? false,
      };
    } catch (e) {
      // The write was attempted: it may have happened. Never retried here.
      return { result: AgentResult.Unconfirmed, reason: "write_failed", detail: `native write failed after it began: ${(e as Error).message}`, proofs: atWrite, proofAgeMs, replayed: false };
    }
  }
  return notSent("proof_stale", "proofs never fitted the freshness window");
}
