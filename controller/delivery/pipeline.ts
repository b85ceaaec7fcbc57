/**
 * What the delivery pipeline needs and its fixed numbers, in one place every step imports
 * (and that imports no step): the journal, the agents, the seat turns, the clock, the stop
 * signal, and the hooks (notices, fault points, metrics) that watch it from outside.
 */
import type { DeliveryMetrics } from "../metrics/fleet-metrics.js";
import type { Logger } from "../../shared/logger.js";
import type { Db } from "../db/open.js";
import type { AgentClients } from "../nodes/agent-clients.js";
import type { Liveness } from "../nodes/liveness.js";
import type { SeatTurns } from "./turn.js";
import type { UnrecordedOutcomes } from "./unrecorded-outcomes.js";
import type { FaultPoints } from "./faults.js";
import type { InstanceLease } from "../fleet/instance-lease.js";

export const MESSAGE_SEAT = "message_seat";
/** How long the controller waits for an agent's answer before the delivery is uncertain. */
export const DELIVER_TIMEOUT_MS = 20_000;
/** A lease outlives the longest Deliver by this much, so a live holder never loses it. */
export const LEASE_SLACK_MS = 10_000;
/** How long a message waits for the seat's turn before it takes the ordinary checks anyway. */
export const SEAT_TURN_WAIT_MS = 25_000;

export interface MessageSeatInput {
  seat: string;
  message: string;
  delivery?: "steer" | "queue" | undefined;
  inReplyTo?: string | undefined;
}

export interface CallScope {
  conversationId: string;
  /** The id from `_meta["clankie/seat-call"].deliveryId`, when the caller minted one. */
  deliveryId?: string | undefined;
  /**
   * A peer message's sender authority (rule 26): its binding and the owner's peer switch, read
   * again with the final observation, just before the agent call; a refusal sends nothing.
   */
  senderRecheck?: SenderRecheck | undefined;
}

export type SenderRecheck = () => Promise<{ reason: "binding_stale" | "peers_off"; detail: string } | undefined>;

export type { FaultPoint, FaultPoints } from "./faults.js";

/**
 * What the pipeline needs, built once in controller/main.ts: every field is there in production and in
 * every suite (the controller is always started whole). What only observes or steers it from outside
 * is in `hooks`. Hire, workers and reports take their own narrow interfaces, which this satisfies.
 */
export interface PipelineDeps {
  db: Db;
  agents: AgentClients;
  turns: SeatTurns;
  logger: Logger;
  /** Wall clock for journal times and the 5-minute release; injectable in tests. */
  now: () => Date;
  isStopping: () => boolean;
  /** Aborted when the controller stops: in-flight calls then answer uncertain. */
  shutdownSignal: AbortSignal;
  /** Ends a Deliver call whose machine went offline (rule 55, controller/nodes/liveness.ts). */
  liveness: Pick<Liveness, "watch">;
  onJournalChange: () => void;
  /** This controller process; its in-flight receipts and leases are recovered if it dies. */
  instanceId: string;
  /**
   * Its lease and epoch (ADR 0036): every journal write for a delivery carries `fence()`, and a
   * native write is sent only while `holds(epoch)` for the epoch the call was admitted under.
   */
  lease: Pick<InstanceLease, "fence" | "holds" | "isServing"> & Partial<Pick<InstanceLease, "fencedByAgent">>;
  /** How long the controller waits for an agent's answer (DELIVER_TIMEOUT_MS unless configured). */
  deliverTimeoutMs: number;
  /** The one wait budget for a seat's turn (deliveries, notices, stops); SEAT_TURN_WAIT_MS unless a test shortens it. */
  seatTurnWaitMs: number;
  /** Registers an in-flight dispatch so a stop can wait for it. */
  track: <T>(p: Promise<T>) => Promise<T>;
  /** Settles the journal could not commit, kept (on disk when configured) until it is back. */
  unrecorded: UnrecordedOutcomes;
  hooks?: PipelineHooks | undefined;
}

/** What watches the pipeline or steers it from outside (notices, fault points, metrics); each is optional. */
export interface PipelineHooks {
  /** The seat took a delivery: proof its agent answers, a moment for its due notices. */
  onDelivered?: ((seatId: string) => void) | undefined;
  /** A fence opened or was resolved on this seat: its pending notices are due. */
  onFenceChange?: ((seatId: string) => void) | undefined;
  /** The crash-window suites' fault points (faults.ts), or CLANKIE_FAULT's. */
  faults?: FaultPoints | undefined;
  /** Prometheus counters (controller/metrics/); absent in tests that do not scrape. */
  metrics?: DeliveryMetrics | undefined;
}

/** A seat lease lasts the longest Deliver plus the slack. */
export function leaseMsOf(deliverTimeoutMs: number): number {
  return deliverTimeoutMs + LEASE_SLACK_MS;
}
