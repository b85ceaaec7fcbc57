/** The controller's configuration, compiled once; nothing below main.ts reads the environment. */
import { DEFAULT_LISTENER_LIMITS, type ListenerLimits } from "./http/listener.js";
import type { FaultPoint } from "./delivery/faults.js";
import { DEFAULT_INSTANCE_LEASE_MS, DEFAULT_INSTANCE_RENEW_MS } from "./journal/instances.js";
import { InvalidArgumentError } from "../shared/errors.js";
import { DEFAULT_UNAUTHENTICATED_LIMITS, type UnauthenticatedLimits } from "./http/unauthenticated-budget.js";

export interface ControllerConfig {
  stateDir: string;
  host: string;
  port: number;
  /** A PostgreSQL URL; undefined means the embedded PGlite in the state directory. */
  databaseUrl: string | undefined;
  heartbeatIntervalMs: number;
  deliverTimeoutMs: number;
  /** How long hire_agent waits for the agent's answer before the hire is start_unconfirmed. */
  hireTimeoutMs: number;
  /** How long in-flight calls may finish after a stop begins; then they answer uncertain. */
  shutdownGraceMs: number;
  /** How long a message waits for a busy seat's turn before it takes the ordinary checks (rule 25: 25 s). */
  seatTurnWaitMs?: number | undefined;
  /** Fault injection for the crash-window suites only (CLANKIE_FAULT). */
  fault: FaultPoint | undefined;
  /** The agent port (mutual TLS, ADR 0021): where agents dial in. */
  agentHost: string;
  agentPort: number;
  /** The host agents are told to dial when agentHost is a wildcard. */
  agentAdvertiseHost: string | undefined;
  /** More names the server certificates carry: a load balancer's, in front of several replicas. */
  tlsNames: string[];
  /** Seals the fleet CA key in the database (CLANKIE_FLEET_CA_PASSPHRASE). */
  caPassphrase: string | undefined;
  /** How long a machine certificate is valid; agents renew at half of it. */
  machineCertTtlMs: number | undefined;
  /** Connection caps and timeouts on the one port, before any handler runs. */
  listenerLimits: ListenerLimits;
  /** What callers without a token may cost: call rate per address, Health/Watch streams (ADR 0034). */
  unauthenticatedLimits: UnauthenticatedLimits;
  /** An MCP session unused this long is closed (default 30 min). */
  mcpSessionIdleMs: number;
  /** Open MCP sessions one conversation may hold; a new one closes its oldest idle one. */
  mcpSessionsPerConversation: number;
  /**
   * This instance's lease in the journal (ADR 0036): a peer takes over its in-flight calls once it has
   * gone unrenewed this long (by the database's clock), and its own writes are refused from then on.
   */
  instanceLeaseMs: number;
  /** How often the lease is renewed; a few renewals fit in one lease, so one slow renewal loses nothing. */
  instanceRenewMs: number;
}

export const DEFAULT_PORT = 7420;
export const DEFAULT_AGENT_PORT = 7421;

export function compileControllerConfig(
  o: Partial<Omit<ControllerConfig, "listenerLimits" | "unauthenticatedLimits">> & {
    stateDir: string;
    listenerLimits?: Partial<ListenerLimits> | undefined;
    unauthenticatedLimits?: Partial<UnauthenticatedLimits> | undefined;
  },
): ControllerConfig {
  return {
    stateDir: o.stateDir,
    host: o.host ?? "127.0.0.1",
    port: o.port ?? DEFAULT_PORT,
    databaseUrl: o.databaseUrl || undefined,
    // Rule 55: offline after 3 missed heartbeats (registry.ts) plus one liveness check: ≤ 7 s, inside the 10 s bound.
    heartbeatIntervalMs: o.heartbeatIntervalMs ?? 2_000,
    deliverTimeoutMs: o.deliverTimeoutMs ?? 20_000,
    hireTimeoutMs: o.hireTimeoutMs ?? 75_000,
    shutdownGraceMs: o.shutdownGraceMs ?? 5_000,
    seatTurnWaitMs: o.seatTurnWaitMs,
    fault: o.fault,
    agentHost: o.agentHost ?? o.host ?? "127.0.0.1",
    // With an ephemeral main port (tests), the agent port is ephemeral too.
    agentPort: o.agentPort ?? (o.port === 0 ? 0 : DEFAULT_AGENT_PORT),
    agentAdvertiseHost: o.agentAdvertiseHost,
    tlsNames: o.tlsNames ?? [],
    caPassphrase: o.caPassphrase || undefined,
    machineCertTtlMs: o.machineCertTtlMs,
    listenerLimits: { ...DEFAULT_LISTENER_LIMITS, ...o.listenerLimits },
    unauthenticatedLimits: { ...DEFAULT_UNAUTHENTICATED_LIMITS, ...o.unauthenticatedLimits },
    mcpSessionIdleMs: o.mcpSessionIdleMs ?? 30 * 60_000,
    mcpSessionsPerConversation: o.mcpSessionsPerConversation ?? 64,
    ...instanceLease(o.instanceLeaseMs, o.instanceRenewMs),
  };
}

/** The lease and its renewal: a renewal must come well inside the lease, or one slow renewal loses it. */
function instanceLease(
  leaseMs = DEFAULT_INSTANCE_LEASE_MS,
  renewMs?: number,
): { instanceLeaseMs: number; instanceRenewMs: number } {
  const renew = renewMs ?? Math.min(DEFAULT_INSTANCE_RENEW_MS, Math.floor(leaseMs / 3));
  if (renew * 2 > leaseMs)
    throw new InvalidArgumentError(
      `the instance lease (${leaseMs} ms) must be at least twice its renewal interval (${renew} ms)`,
    );
  return { instanceLeaseMs: leaseMs, instanceRenewMs: renew };
}
