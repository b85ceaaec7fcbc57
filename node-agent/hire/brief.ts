/**
 * The hire's brief through the ordinary delivery pipeline (native channel, freshness gate).
 * The hire is its own authority, stamped on this machine's clock as each attempt takes the
 * seat's lock, so it carries no transit bound: no wire lies between the stamp and the gate.
 * A harness that has only just started can answer its first probes slower than the gate
 * allows (OpenCode's server on a loaded machine took 260–415 ms in CI), and a refusal for a
 * stale proof is definite — nothing was written — so it is tried again after a growing
 * pause, a bounded number of times. Every other answer is final at once.
 */
import { AgentResult } from "../../shared/verdicts.js";
import { deliver, type DeliverDeps, type DeliverVerdict } from "../deliver/deliver.js";
import { sleep } from "../proofs/freshness.js";
import type { SeatLocks } from "../seats/seat-locks.js";

/** Pauses before each further attempt after a stale refusal: six attempts, under 4 s of waiting in all. */
export const BRIEF_RETRY_PAUSES_MS: readonly number[] = [100, 250, 500, 1000, 2000];

export interface BriefRequest {
  seatName: string;
  deliveryId: string;
  text: string;
  conversationId: string;
  occupantId: string;
}

export interface BriefVerdict extends DeliverVerdict {
  /** How many times the gate was tried; more than one only after definite stale refusals. */
  attempts: number;
}

export async function sendBrief(deps: DeliverDeps & { locks: SeatLocks }, req: BriefRequest): Promise<BriefVerdict> {
  const wait = deps.wait ?? sleep;
  const attempt = () =>
    deps.locks.run(req.seatName, () =>
      deliver(deps, { ...req, mode: "auto", authorityAgeMs: 0, arrivedAtMs: deps.clock.nowMs(), transitBoundMs: 0 }),
    );
  let verdict = await attempt();
  let attempts = 1;
  for (const pause of BRIEF_RETRY_PAUSES_MS) {
    if (verdict.result !== AgentResult.NotSent || verdict.reason !== "proof_stale") break;
    await wait(pause);
    verdict = await attempt();
    attempts++;
  }
  return { ...verdict, attempts };
}
