/**
 * The domain's words as string literals, and the one place that converts them to and
 * from the protobuf enums, so `*_UNSPECIFIED = 0` never reaches domain code.
 */
import {
  DeliveryMode as PbDeliveryMode,
  SeatKind as PbSeatKind,
  SeatStatus as PbSeatStatus,
} from "./gen/clankie/fleet/v1/seat_pb.js";
import { DeliveryResult as PbDeliveryResult } from "./gen/clankie/fleet/v1/delivery_pb.js";

export const SeatKind = {
  Mailbox: "mailbox",
  Codex: "codex",
  Claude: "claude",
  OpenCode: "opencode",
  Pi: "pi",
} as const;
export type SeatKind = (typeof SeatKind)[keyof typeof SeatKind];

export const DeliveryMode = { Auto: "auto", Steer: "steer", Queue: "queue" } as const;
export type DeliveryMode = (typeof DeliveryMode)[keyof typeof DeliveryMode];

export const SeatStatus = {
  Idle: "idle",
  Working: "working",
  Blocked: "blocked",
  Offline: "offline",
  Unknown: "unknown",
} as const;
export type SeatStatus = (typeof SeatStatus)[keyof typeof SeatStatus];

/** The node agent's verdict on one native write. */
export const AgentResult = {
  Delivered: "delivered",
  Queued: "queued",
  Steered: "steered",
  Started: "started",
  NotSent: "not_sent",
  Rejected: "rejected",
  Unconfirmed: "unconfirmed",
} as const;
export type AgentResult = (typeof AgentResult)[keyof typeof AgentResult];

/** A delivery receipt's state in the journal. */
export const ReceiptState = {
  Dispatching: "dispatching",
  Delivered: "delivered",
  Queued: "queued",
  Steered: "steered",
  Started: "started",
  NotSent: "not_sent",
  Rejected: "rejected",
  Unconfirmed: "unconfirmed",
  Uncertain: "uncertain",
  AbandonedUnknown: "abandoned-unknown",
} as const;
export type ReceiptState = (typeof ReceiptState)[keyof typeof ReceiptState];

/** States that leave the receipt unresolved: the message may or may not be in the seat. */
export const UNRESOLVED_STATES: readonly ReceiptState[] = [
  ReceiptState.Dispatching,
  ReceiptState.Unconfirmed,
  ReceiptState.Uncertain,
];

export function isUnresolved(state: string): boolean {
  return (UNRESOLVED_STATES as readonly string[]).includes(state);
}

const kinds: [SeatKind, PbSeatKind][] = [
  [SeatKind.Mailbox, PbSeatKind.MAILBOX],
  [SeatKind.Codex, PbSeatKind.CODEX],
  [SeatKind.Claude, PbSeatKind.CLAUDE],
  [SeatKind.OpenCode, PbSeatKind.OPENCODE],
  [SeatKind.Pi, PbSeatKind.PI],
];
const modes: [DeliveryMode, PbDeliveryMode][] = [
  [DeliveryMode.Auto, PbDeliveryMode.UNSPECIFIED],
  [DeliveryMode.Steer, PbDeliveryMode.STEER],
  [DeliveryMode.Queue, PbDeliveryMode.QUEUE],
];
const statuses: [SeatStatus, PbSeatStatus][] = [
  [SeatStatus.Unknown, PbSeatStatus.UNSPECIFIED],
  [SeatStatus.Idle, PbSeatStatus.IDLE],
  [SeatStatus.Working, PbSeatStatus.WORKING],
  [SeatStatus.Blocked, PbSeatStatus.BLOCKED],
  [SeatStatus.Offline, PbSeatStatus.OFFLINE],
];
const results: [AgentResult, PbDeliveryResult][] = [
  [AgentResult.Delivered, PbDeliveryResult.DELIVERED],
  [AgentResult.Queued, PbDeliveryResult.QUEUED],
  [AgentResult.Steered, PbDeliveryResult.STEERED],
  [AgentResult.Started, PbDeliveryResult.STARTED],
  [AgentResult.NotSent, PbDeliveryResult.NOT_SENT],
  [AgentResult.Rejected, PbDeliveryResult.REJECTED],
  [AgentResult.Unconfirmed, PbDeliveryResult.UNCONFIRMED],
];

function converter<D, P>(pairs: [D, P][]) {
  return {
    encode(d: D): P {
      const hit = pairs.find(([x]) => x === d);
      if (!hit) throw new Error(`no wire value for ${String(d)}`);
      return hit[1];
    },
    decode(p: P): D | undefined {
      return pairs.find(([, x]) => x === p)?.[0];
    },
  };
}

export const seatKindWire = converter(kinds);
export const deliveryModeWire = converter(modes);
export const seatStatusWire = converter(statuses);
export const agentResultWire = converter(results);

/** The reason of a Deliver an agent refused because a peer had it fence the sender's controller epoch (ADR 0043). */
export const EPOCH_FENCED = "epoch_fenced";
