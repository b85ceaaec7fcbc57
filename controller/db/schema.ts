/**
 * The journal's tables. Row types are inferred from here; SQL names are snake_case.
 * The receipt text is never stored: only fingerprints (ADR 0207, VUH-1638).
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgSequence,
  pgTable,
  serial,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

const at = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const machines = pgTable("machines", {
  name: text("name").primaryKey(),
  endpoint: text("endpoint").notNull(),
  // The bearer token the controller presents to this agent.
  agentToken: text("agent_token").notNull(),
  instanceId: text("instance_id").notNull(),
  platform: text("platform").notNull(),
  capabilityVersion: integer("capability_version").notNull(),
  agentVersion: text("agent_version").notNull(),
  registeredAt: at("registered_at").notNull().defaultNow(),
  lastSeenAt: at("last_seen_at").notNull().defaultNow(),
});

export const seats = pgTable(
  "seats",
  {
    id: text("id").primaryKey(),
    machine: text("machine")
      .notNull()
      .references(() => machines.name),
    name: text("name").notNull(),
    kind: text("kind").notNull(),
    status: text("status").notNull(),
    occupantId: text("occupant_id").notNull(),
    title: text("title").notNull().default(""),
    inputCapabilities: jsonb("input_capabilities").$type<InputCapabilitiesRow>().notNull(),
    // The harness's own word that the worker cannot take a turn (issue 35); null when it said nothing against it.
    cannotWork: jsonb("cannot_work").$type<CannotWorkRow>(),
    // False once the agent stopped reporting the seat; kept for the receipts that name it.
    present: boolean("present").notNull().default(true),
    updatedAt: at("updated_at").notNull().defaultNow(),
  },
  (t) => [index("seats_name_idx").on(t.name)],
);

export const conversations = pgTable("conversations", {
  id: text("id").primaryKey(),
  // sha256 of the lead bearer token bound to this conversation.
  tokenHash: text("token_hash").unique(),
  createdAt: at("created_at").notNull().defaultNow(),
});

export const callReceipts = pgTable(
  "operator_call_receipts",
  {
    id: text("id").primaryKey(),
    tool: text("tool").notNull(),
    conversationId: text("conversation_id").notNull(),
    fingerprint: text("fingerprint").notNull(),
    // in_flight → settled | uncertain; uncertain → settled (late evidence or a settle path).
    state: text("state").notNull(),
    result: jsonb("result").$type<Record<string, unknown>>(),
    // The result body was dropped by retention; id, scope and fingerprint remain as a tombstone.
    resultExpired: boolean("result_expired").notNull().default(false),
    // The controller process that admitted the call; a dead one's in-flight calls become uncertain.
    controllerInstance: text("controller_instance"),
    // The admitting instance's lease epoch (ADR 0036): only that (instance, epoch) may settle the call;
    // a peer that takes the call over clears it, so a replica that wakes from a pause writes nothing.
    controllerEpoch: bigint("controller_epoch", { mode: "number" }),
    createdAt: at("created_at").notNull().defaultNow(),
    settledAt: at("settled_at"),
  },
  (t) => [
    index("operator_call_receipts_settled_idx").on(t.state, t.settledAt),
    index("operator_call_receipts_in_flight_idx").on(t.controllerInstance).where(sql`${t.state} = 'in_flight'`),
  ],
);

export const deliveryReceipts = pgTable(
  "delivery_receipts",
  {
    id: text("id").primaryKey(),
    conversationId: text("conversation_id").notNull(),
    seatId: text("seat_id").notNull(),
    contentFingerprint: text("content_fingerprint").notNull(),
    mode: text("mode").notNull(),
    state: text("state").notNull(),
    reason: text("reason"),
    detail: text("detail"),
    nativeReceiptId: text("native_receipt_id"),
    proofAgeMs: integer("proof_age_ms"),
    proofs: jsonb("proofs").$type<ProofRow[]>(),
    inReplyTo: text("in_reply_to"),
    // The seat's occupant the write was admitted for (rule 30): a later occupant's session proves nothing about it.
    // Null on receipts admitted before issue 16's column existed.
    occupantId: text("occupant_id"),
    // Rule 42: the harness's own id of the stored message and the session file holding it (Pi's
    // session entry id and sessionFile). Null where the harness has none or the answer was lost.
    nativeMessageId: text("native_message_id"),
    nativeSessionPath: text("native_session_path"),
    createdAt: at("created_at").notNull().defaultNow(),
    dispatchedAt: at("dispatched_at"),
    settledAt: at("settled_at"),
  },
  (t) => [
    index("delivery_receipts_seat_state_idx").on(t.seatId, t.state),
    index("delivery_receipts_created_idx").on(t.createdAt),
    index("delivery_receipts_seat_content_idx").on(t.seatId, t.contentFingerprint),
    // reconcile_seat_call({nativeId}) finds a receipt by the harness's own id (rule 30).
    index("delivery_receipts_native_message_idx").on(t.nativeMessageId),
    index("delivery_receipts_native_receipt_idx").on(t.nativeReceiptId),
  ],
);

export const fences = pgTable(
  "fences",
  {
    deliveryId: text("delivery_id")
      .primaryKey()
      .references(() => deliveryReceipts.id),
    seatId: text("seat_id").notNull(),
    contentFingerprint: text("content_fingerprint").notNull(),
    conversationId: text("conversation_id").notNull().default(""),
    openedAt: at("opened_at").notNull().defaultNow(),
    resolvedAt: at("resolved_at"),
    // How the fence was resolved: delivered, abandoned-unknown, not_sent.
    disposition: text("disposition"),
    // One notice per unresolved receipt; once acknowledged it is never sent again (VUH-2196).
    noticeAttempts: integer("notice_attempts").notNull().default(0),
    noticeSentAt: at("notice_sent_at"),
    noticeAcknowledgedAt: at("notice_acknowledged_at"),
    // The controller instance that made the last attempt: claimed atomically, so two replicas never
    // both send it and one process never tries twice (rule 17; issue 16).
    noticeClaimedBy: text("notice_claimed_by"),
    // When a later message of the same conversation carried this settled original as `previous`.
    previousReportedAt: at("previous_reported_at"),
  },
  (t) => [index("fences_open_idx").on(t.seatId).where(sql`${t.resolvedAt} is null`)],
);

export const settlements = pgTable("settlements", {
  id: serial("id").primaryKey(),
  deliveryId: text("delivery_id")
    .notNull()
    .references(() => deliveryReceipts.id),
  disposition: text("disposition").notNull(),
  settledBy: text("settled_by").notNull(),
  conversationId: text("conversation_id"),
  evidence: jsonb("evidence").$type<Record<string, unknown>>().notNull(),
  at: at("at").notNull().defaultNow(),
});

/**
 * Worker reports (message_clankie), owned by the conversation that hired or last messaged
 * the seat. Kept while pending or delivered; once read, for 24 hours (ADR 0207, VUH-2410).
 */
export const workerReports = pgTable(
  "worker_reports",
  {
    id: text("id").primaryKey(),
    seatId: text("seat_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    // True when no conversation had messaged the seat: routed to global-default.
    unadopted: boolean("unadopted").notNull().default(false),
    text: text("text").notNull(),
    // pending → delivered (offered to the lead) → read (acknowledged).
    state: text("state").notNull(),
    createdAt: at("created_at").notNull(),
    acceptedAt: at("accepted_at").notNull().defaultNow(),
    offeredAt: at("offered_at"),
    readAt: at("read_at"),
  },
  (t) => [index("worker_reports_conversation_idx").on(t.conversationId, t.state)],
);

/** Every controller instance's lease epoch comes from here: new at each start and each re-acquire (ADR 0036). */
export const controllerInstanceEpochs = pgSequence("controller_instance_epochs");

/**
 * Controller instances on this journal, each holding a lease (ADR 0036): renewed every few seconds,
 * judged by the database's clock. A peer takes over an instance's in-flight calls and seat leases
 * only once its lease has expired; every write made for a delivery names (id, epoch) and is refused
 * unless that lease is live with that epoch.
 */
export const controllerInstances = pgTable("controller_instances", {
  id: text("id").primaryKey(),
  // pid and host are for display only: liveness is the lease, never a process id or a host name.
  pid: integer("pid").notNull(),
  host: text("host").notNull().default(""),
  startedAt: at("started_at").notNull().defaultNow(),
  heartbeatAt: at("heartbeat_at").notNull().defaultNow(),
  // The https address agents dial to reach this replica (null before it listens).
  agentUrl: text("agent_url"),
  epoch: bigint("epoch", { mode: "number" }).notNull().default(sql`nextval('controller_instance_epochs')`),
  // Set from the database's now() at every renewal; a row past it is expired, whatever its process does.
  leaseExpiresAt: at("lease_expires_at").notNull().defaultNow(),
});

/**
 * Per-seat turn leases: one delivery per seat at a time across every controller process
 * on this database. A lease past its expiry belongs to a dead holder and can be taken.
 */
export const seatTurns = pgTable("seat_turns", {
  seatId: text("seat_id").primaryKey(),
  holder: text("holder").notNull(),
  expiresAt: at("expires_at").notNull(),
});

/**
 * The seats' fleet-wide lines (ADR 0039): one row per delivery (or notice, or stop) of any controller
 * waiting for a seat's turn, in admission order. A settle hands the seat's lease to the oldest live
 * row; a row lives until its turn comes or its wait (the 25 s rule) is over, and counts only while
 * its controller's instance lease is live (ADR 0036).
 */
export const seatWaiters = pgTable(
  "seat_waiters",
  {
    holder: text("holder").primaryKey(),
    seatId: text("seat_id").notNull(),
    admittedAt: at("admitted_at").notNull(),
    expiresAt: at("expires_at").notNull(),
  },
  (t) => [index("seat_waiters_line_idx").on(t.seatId, t.admittedAt, t.holder)],
);

/** Per-fleet settings the owner sets; a missing row means every default (peer messages off). */
export const fleetSettings = pgTable("fleet_settings", {
  fleet: text("fleet").primaryKey(),
  peerMessages: boolean("peer_messages").notNull().default(false),
  updatedAt: at("updated_at").notNull().defaultNow(),
});
/**
 * Hire receipts (hire_agent, ADR 0213; P/hire-receipts): written with the operator call
 * receipt before any effect, never holding the arguments' text. An id is launched at most
 * once, ever: a settled original stays refused, and new work for the same intent names it
 * as `afterReceiptId` of a fresh intent.
 */
export const hireReceipts = pgTable(
  "hire_receipts",
  {
    id: text("id").primaryKey(),
    conversationId: text("conversation_id").notNull(),
    fingerprint: text("fingerprint").notNull(),
    machine: text("machine").notNull(),
    harness: text("harness").notNull(),
    // reserved → launching → spawned | failed | start_unconfirmed | delivery_unconfirmed;
    // unresolved → settled-not-launched | abandoned-unknown (owner) or spawned (host journal).
    state: text("state").notNull(),
    reason: text("reason"),
    // The seat this hire produced, with its occupant: list_seats and reports bind on both.
    seatId: text("seat_id"),
    occupantId: text("occupant_id"),
    paneId: text("pane_id"),
    // Census and settle evidence; never request text.
    evidence: jsonb("evidence").$type<Record<string, unknown>>(),
    freshIntentId: text("fresh_intent_id"),
    // The settled original this fresh intent follows; one fresh intent per original.
    afterReceiptId: text("after_receipt_id").unique(),
    createdAt: at("created_at").notNull().defaultNow(),
    updatedAt: at("updated_at").notNull().defaultNow(),
    settledAt: at("settled_at"),
  },
  (t) => [index("hire_receipts_seat_idx").on(t.seatId), index("hire_receipts_state_idx").on(t.state)],
);

export interface InputCapabilitiesRow {
  deliveryModes: ("steer" | "queue")[];
  interrupt: boolean;
  nextTurnOnly: boolean;
}

export interface CannotWorkRow {
  reason: string;
  detail: string;
}

export interface ProofRow {
  kind: string;
  outcome: string;
  detail: string;
  ageAtWriteMs: number;
}

export type Machine = typeof machines.$inferSelect;
export type SeatRowDb = typeof seats.$inferSelect;
export type CallReceipt = typeof callReceipts.$inferSelect;
export type DeliveryReceipt = typeof deliveryReceipts.$inferSelect;
export type Fence = typeof fences.$inferSelect;
export type HireReceipt = typeof hireReceipts.$inferSelect;

/**
 * The fleet's certificate authority: one row, created by the first controller on this
 * database and shared by every replica (ADR 0020). The key is PKCS#8 PEM, sealed with
 * AES-256-GCM when the controllers are given a passphrase.
 */
export const fleetCa = pgTable("fleet_ca", {
  id: text("id").primaryKey(),
  fleetId: text("fleet_id").notNull(),
  certificatePem: text("certificate_pem").notNull(),
  keyPem: text("key_pem").notNull(),
  // "plain" or "scrypt-aes256gcm".
  keyProtection: text("key_protection").notNull(),
  createdAt: at("created_at").notNull().defaultNow(),
});

/** Single-use join tokens: only the secret's sha256 is kept; bound to one machine name. */
export const joinTokens = pgTable("join_tokens", {
  id: text("id").primaryKey(),
  machine: text("machine").notNull(),
  secretHash: text("secret_hash").notNull(),
  expiresAt: at("expires_at").notNull(),
  usedAt: at("used_at"),
  createdAt: at("created_at").notNull().defaultNow(),
});

/** Every machine certificate the fleet CA issued; a connection's serial must be here and not revoked. */
export const machineCerts = pgTable(
  "machine_certs",
  {
    serial: text("serial").primaryKey(),
    machine: text("machine").notNull(),
    notAfter: at("not_after").notNull(),
    issuedAt: at("issued_at").notNull().defaultNow(),
    revokedAt: at("revoked_at"),
  },
  (t) => [index("machine_certs_machine_idx").on(t.machine)],
);

export type MachineCertRow = typeof machineCerts.$inferSelect;

/**
 * The fleet's shared secrets, one row each (issue 34 item 3, ADR 0037): the owner token and
 * global-default's lead token (every state directory keeps a copy of both) and the key that signs
 * MCP session ids. The first replica on a database writes them; every later one adopts them.
 */
export const fleetSecrets = pgTable("fleet_secrets", {
  name: text("name").primaryKey(),
  // The secret, sealed like fleet_ca's key when the controllers have a passphrase.
  value: text("value").notNull(),
  // "plain" or "scrypt-aes256gcm".
  protection: text("protection").notNull(),
  updatedAt: at("updated_at").notNull().defaultNow(),
});

/**
 * An MCP session's fleet-wide life (ADR 0037): a replica that did not open the session resumes it
 * while its row is here and was used within the idle time; the session table's bounds delete it.
 */
export const mcpSessions = pgTable(
  "mcp_sessions",
  {
    id: text("id").primaryKey(),
    conversationId: text("conversation_id").notNull(),
    // Touched at most every quarter of the idle time per replica (controller/mcp/fleet-sessions.ts).
    lastUsedAt: at("last_used_at").notNull().defaultNow(),
  },
  (t) => [index("mcp_sessions_conversation_idx").on(t.conversationId, t.lastUsedAt)],
);
