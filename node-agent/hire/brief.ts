/**
 * The hire's brief through the ordinary delivery pipeline (native channel, freshness gate), and the
 * hire's answer from what the brief did (briefSeat).
 * The hire is its own authority, stamped on this machine's clock as each attempt takes the
 * seat's lock, so it carries no transit bound: no wire lies between the stamp and the gate.
 * A harness that has only just started can answer its first probes slower than the gate
 * allows (OpenCode's server on a loaded machine took 260–415 ms in CI), and a refusal for a
 * stale proof is definite — nothing was written — so it is tried again after a growing
 * pause, a bounded number of times. Every other answer is final at once.
 */
import { createHash } from "node:crypto";
import { AgentResult } from "../../shared/verdicts.js";
import { deliver, type DeliverDeps, type DeliverVerdict } from "../deliver/deliver.js";
import type { SeatRecord } from "../harnesses/adapter.js";
import { sleep } from "../proofs/freshness.js";
import type { SeatLocks } from "../seats/seat-locks.js";
import { briefDeliverDeps, type HireFaultPoint } from "./faults.js";
import type { RecordedAnswer } from "./host-journal.js";

/** The brief's delivery id, derived from the hire id: one hire, one brief id, ever. */
export function briefDeliveryId(hireId: string): string {
  const h = createHash("sha256").update(`clankie-brief:${hireId.toLowerCase()}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** What the worker reads first: its role, then the brief. */
export function briefText(role: string, brief: string): string {
  return `[role: ${role}]\n${brief}`;
}

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

/** What the brief's step uses: the seat's lock, its adapter, the clock, and the ordinary delivery. */
export type BriefSeatDeps = DeliverDeps & { locks: SeatLocks };

/**
 * The hire's last step once its seat is ready: the seat is inspected once more under its lock, then
 * the brief (if any) goes in natively; the hire's answer says how, or why the brief did not.
 */
export async function briefSeat(
  d: BriefSeatDeps,
  cmd: { hireId: string; role: string; brief: string; conversationId: string },
  seat: SeatRecord,
  at: { paneId: string; harness: string },
  fault: HireFaultPoint | undefined,
): Promise<RecordedAnswer> {
  const { paneId, harness } = at;
  const base = { paneId, launchCommitted: true };
  const inspected = await d.locks.run(seat.name, () => d.adapters.get(seat.kind)!.inspect(seat));
  const wireSeat = {
    name: seat.name,
    kind: seat.kind,
    status: inspected.snapshot.status,
    occupantId: inspected.snapshot.occupantId,
    title: seat.title,
    inputCapabilities: inspected.snapshot.inputCapabilities,
  };
  const seatPart = { seatName: seat.name, seat: wireSeat };
  if (!cmd.brief) {
    const proofs = inspected.proofs.map((p) => ({
      kind: p.kind,
      outcome: p.outcome,
      detail: p.detail,
      ageAtWriteMs: Math.max(0, Math.round(d.clock.nowMs() - p.completedAtMs)),
    }));
    return {
      ...base,
      ...seatPart,
      outcome: "spawned",
      reason: "",
      detail: `${harness} started in pane ${paneId} as seat ${seat.name}; no brief`,
      briefMechanism: "none",
      proofs,
    };
  }
  const deliveryId = briefDeliveryId(cmd.hireId);
  const verdict = await sendBrief(briefDeliverDeps(d, fault), {
    seatName: seat.name,
    deliveryId,
    text: briefText(cmd.role, cmd.brief),
    conversationId: cmd.conversationId,
    occupantId: seat.occupantId,
  });
  const proofs = verdict.proofs.map((p) => ({
    kind: p.kind,
    outcome: p.outcome,
    detail: p.detail,
    ageAtWriteMs: Math.max(0, Math.round(p.ageAtWriteMs)),
  }));
  const mechanism = {
    [AgentResult.Delivered]: "delivered",
    [AgentResult.Queued]: "queued",
    [AgentResult.Steered]: "steered",
    [AgentResult.Started]: "started",
  } as Partial<Record<AgentResult, string>>;
  const m = mechanism[verdict.result];
  if (m)
    return {
      ...base,
      ...seatPart,
      outcome: "spawned",
      reason: "",
      detail: `${harness} started in pane ${paneId} as seat ${seat.name}; the brief went in natively (${m})`,
      briefMechanism: m,
      briefDeliveryId: deliveryId,
      proofs,
    };
  if (verdict.result === AgentResult.Unconfirmed) {
    return {
      ...base,
      ...seatPart,
      outcome: "failed",
      reason: "delivery_unconfirmed",
      detail: `the seat ${seat.name} is up, but the brief's native write was not confirmed (${verdict.detail}); it will never be written again`,
      briefMechanism: "unconfirmed",
      briefDeliveryId: deliveryId,
      proofs,
    };
  }
  return {
    ...base,
    ...seatPart,
    outcome: "failed",
    reason: "not_ready",
    detail: `the seat ${seat.name} is up but did not take the brief (${verdict.reason ?? ""}: ${verdict.detail}${verdict.attempts > 1 ? `; ${verdict.attempts} attempts` : ""}); nothing was written. Message it with message_seat once it is ready`,
    briefMechanism: "not_sent",
    briefDeliveryId: deliveryId,
    proofs,
    controlReason: "not_ready",
    controlFix: `the pane ${paneId} stays open`,
  };
}
