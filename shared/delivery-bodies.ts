/**
 * The bodies a lead receives from message_seat, hire_agent and reconcile_seat_call, in the spec's words,
 * and every reason the controller itself gives for a message that was not (or may not have
 * been) delivered. Settled bodies are stored on the call receipt and returned unchanged on a
 * repeat or a reconcile. Reasons the node agent reports come from its adapters and pass
 * through as `AgentReason`.
 */
export const SEAT_CALL_META_KEY = "clankie/seat-call";
export const RECONCILE_TOOL = "reconcile_seat_call";

/** Why the controller did not send, or cannot say whether it sent (its own words only). */
export type ControllerReason =
  | "unknown_seat"
  | "ambiguous_seat"
  | "seat_gone"
  | "occupant_changed"
  | "fenced_by_unresolved_original"
  | "agent_unreachable"
  | "agent_refused"
  | "journal_unavailable"
  | "service_stopping"
  | "answer_lost"
  | "controller_stopped"
  | "recipient_gone"
  | "binding_stale"
  | "peers_off"
  /** The replica's instance lease was not surely live just before the send (ADR 0036): nothing was sent. */
  | "lease_lost";

/** A reason the agent's adapter gave (proof_stale, delivery_mode_unsupported, …): kept verbatim. */
export type AgentReason = string & { readonly agentReason?: never };

export type DeliveryReason = ControllerReason | AgentReason;

export type MessageOutcome = "delivered" | "unconfirmed" | "undelivered" | "seat_offline" | "unknown_seat";
export type DeliveryStage = "stored" | "delivered" | "consumed" | "uncertain" | "rejected" | "unavailable";

export interface ProofBody {
  kind: string;
  outcome: string;
  detail: string;
  ageAtWriteMs: number;
}

export interface MessageSeatBody {
  schemaVersion: 1;
  outcome: MessageOutcome;
  deliveryId: string;
  seat: string;
  deliveryStage: DeliveryStage;
  state?: "queued" | "started" | "steered";
  status?: "queued_until_turn_end";
  reason?: DeliveryReason;
  detail: string;
  nativeReceiptId?: string;
  proofAgeMs?: number;
  proofs?: ProofBody[];
  /** Settled originals of this seat and conversation, reported once with the next message that went out (rule 28). */
  previous?: { deliveryId: string; state: string }[];
  /** For a refused resend: the unresolved original it matched (rule 15). */
  originalDeliveryId?: string;
  originalState?: string;
  /** A reconcile's reading of the session for a settled-but-unconfirmed original. */
  sessionCheck?: string;
}

export interface UncertainBody {
  schemaVersion: 1;
  outcome: "uncertain";
  deliveryStage: "uncertain";
  tool: string;
  detail: string;
  reconcileTool: typeof RECONCILE_TOOL;
  deliveryId?: string;
  hireId?: string;
  seat?: string;
  receiptState?: string;
}

/**
 * A typed refusal before admission (controller/mcp/tool-result.ts errorResult): the caller's
 * argument, the journal being unavailable (nothing dispatched, and an earlier answer for the
 * same id still stands), or anything else refused.
 */
export type AdmissionRefusalOutcome = "invalid_argument" | "unavailable" | "refused";

/** A call refused before anything was dispatched, or a reconcile that changes nothing. */
export interface RefusedBody {
  schemaVersion: 1;
  outcome: "refused" | "expired" | "no_matching_receipt";
  reason?: "receipt_conflict" | "receipt_in_use" | "already_settled" | "no_matching_receipt";
  deliveryId?: string;
  /** A hire's call names its hire id instead. */
  hireId?: string;
  detail: string;
}

/** What a settle path records for an original it resolved (reconcile, owner, unattended release). */
export interface SettledOriginalBody {
  schemaVersion: 1;
  outcome: "undelivered" | "delivered";
  deliveryStage: "unavailable" | "delivered";
  state?: "abandoned-unknown" | "not_sent";
  /** not_sent at reconciliation: why, and what was checked (issue 32, item 6). */
  reason?: "proven_absent";
  proof?: Record<string, unknown>;
  deliveryId: string;
  seat: string;
  nativeReceiptId?: string;
  detail: string;
}

export type HireOutcome = "spawned" | "failed";

/** Why a hire failed. The first eight are the spec's; the rest name what this controller knows. */
export type HireReason =
  | "unknown_directory"
  | "harness_unavailable"
  | "not_ready"
  | "trust_required"
  | "herdr_unreachable"
  | "at_capacity"
  | "start_unconfirmed"
  | "delivery_unconfirmed"
  | "launch_failed"
  | "unknown_machine"
  | "machine_offline"
  | "agent_refused"
  | "fresh_intent_refused"
  | "settled_not_launched"
  | "abandoned_unknown"
  | "journal_unavailable";

/**
 * hire_agent's body (and a reconcile's of a hire). A type, not an interface: it is stored on
 * the call receipt as a JSON record as it is.
 */
export type HireBody = {
  schemaVersion: 1;
  outcome: HireOutcome;
  hireId: string;
  machine: string;
  harness: string;
  /** HireReason, or a reason the agent gave verbatim. */
  reason?: HireReason | AgentReason;
  detail: string;
  /** The fleet-wide seat id ("machine/name") of the new seat. */
  seat?: string;
  paneId?: string;
  occupantId?: string;
  inputCapabilities?: { deliveryModes: string[]; interrupt: boolean; nextTurnOnly: boolean };
  brief?: { mechanism: string; deliveryId: string };
  proofs?: ProofBody[];
  /** What the owner can do about it. */
  control?: { reason: string; fix: string };
  /** True once a launch may have happened on the machine. */
  launchCommitted?: boolean;
  /** For an uncertain hire: reconcile it, never hire it again. */
  deliveryStage?: "uncertain";
  reconcileTool?: typeof RECONCILE_TOOL;
  /** For a settled original: new work for the same intent needs freshIntent naming it. */
  freshIntentAllowed?: boolean;
  freshIntent?: { id: string; afterReceiptId: string };
  /** A reconcile that recorded the agent's answer from its host journal. */
  recoveredFrom?: "host_journal";
  /** A reconcile's reading of the machine's census for an unresolved hire, and what it saw. */
  censusCheck?: string;
  census?: Record<string, unknown>;
};

export type LeadBody = MessageSeatBody | UncertainBody | RefusedBody | SettledOriginalBody | HireBody;

export function uncertainBody(tool: string, id: string, detail: string): UncertainBody {
  return {
    schemaVersion: 1,
    outcome: "uncertain",
    deliveryStage: "uncertain",
    deliveryId: id,
    tool,
    detail,
    reconcileTool: RECONCILE_TOOL,
  };
}
