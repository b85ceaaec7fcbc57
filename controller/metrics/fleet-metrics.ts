/**
 * The controller's Prometheus metrics (prom-client), one registry per controller so several
 * controllers in one process (tests) never share counters. Names follow
 * clankie_<subsystem>_<name>_<unit>: counters end in _total, durations are _seconds histograms.
 * Labels are closed sets (outcome words, states, stages, age ranges); never an id or a text.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { BuildInfo } from "./build-info.js";

/** What the delivery path reports, one call per event (see delivery-hooks.ts). */
export interface DeliveryMetrics {
  /** A message_seat call answered: its outcome word, how long it took, and the gate's proof age at the write. */
  messageSeatAnswered(outcome: string, seconds: number, proofAgeMs: number | undefined): void;
  /** The journal failed at a stage of the delivery path. */
  journalError(stage: JournalStage): void;
  /** A hire_agent call answered, by outcome (delivery-hooks.ts observeHire). */
  hireAnswered(outcome: string): void;
}

export type JournalStage = "admit" | "before_dispatch" | "settle";

/** Values read from the journal and the registry when Prometheus scrapes. */
export interface ScrapeSources {
  /** Delivery receipts per state. */
  receiptsByState(): Promise<Map<string, number>>;
  /** Unresolved receipts (uncertain, unconfirmed, dispatching) by state and age range. */
  unresolvedByAge(): Promise<{ state: string; age: AgeRange; count: number }[]>;
  fencesOpen(): Promise<number>;
  /** Registered machines; online ones; revoked ones (offline by the owner's choice until `fleet remove`). */
  agents(): Promise<{ registered: number; online: number; revoked: number }>;
  mcpSessions(): number;
  /** This replica's reverse links: agents with a live link, and open link sockets (a redial overlaps briefly). */
  links(): { agents: number; sockets: number };
}

/** Who this controller is, for the labels that tell replicas and builds apart. */
export interface MetricsIdentity {
  build: BuildInfo;
  /** This replica's instance id (the journal's controller_instances row). */
  replica: string;
}

export const AGE_RANGES = [
  { label: "under_1m", maxSeconds: 60 },
  { label: "1m_to_1h", maxSeconds: 3600 },
  { label: "1h_to_1d", maxSeconds: 86_400 },
  { label: "over_1d", maxSeconds: Infinity },
] as const;
export type AgeRange = (typeof AGE_RANGES)[number]["label"];

export function ageRange(seconds: number): AgeRange {
  return AGE_RANGES.find((r) => seconds < r.maxSeconds)!.label;
}

export class FleetMetrics implements DeliveryMetrics {
  readonly registry = new Registry();
  private readonly deliveries: Counter<"outcome">;
  private readonly latency: Histogram;
  private readonly proofAge: Histogram;
  private readonly journalErrors: Counter<"stage">;
  private readonly hires: Counter<"outcome">;
  private readonly statements: Histogram<"statement">;
  private readonly agentCalls: Histogram<"method" | "code">;

  constructor(sources: ScrapeSources, who: MetricsIdentity) {
    const registers = [this.registry];
    // Memory, CPU, file descriptors, event-loop lag, GC: prom-client's standard process_* and nodejs_* families.
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: "clankie_build_info",
      help: "Always 1; the labels name the running build: controller version, Node version, git commit (or unknown).",
      labelNames: ["version", "node_version", "commit"],
      registers,
    }).set({ version: who.build.version, node_version: who.build.nodeVersion, commit: who.build.commit }, 1);
    this.hires = new Counter({
      name: "clankie_hire_hires_total",
      help: "hire_agent calls answered by outcome: spawned, failed, uncertain, invalid_argument, unavailable, refused.",
      labelNames: ["outcome"],
      registers,
    });
    for (const outcome of ["spawned", "failed", "uncertain"]) this.hires.inc({ outcome }, 0);
    this.statements = new Histogram({
      name: "clankie_journal_statement_seconds",
      help: "Time the journal's hot-path statements took (admit, recheck, settle, join_turn, poll_turn, pass_turn, release_turn).",
      labelNames: ["statement"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.agentCalls = new Histogram({
      name: "clankie_agent_call_seconds",
      help: "Duration of the controller's unary calls to node agents over reverse links, by method and result code.",
      labelNames: ["method", "code"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 75],
      registers,
    });
    const replica = who.replica;
    new Gauge({
      name: "clankie_fleet_agents_linked",
      help: "Node agents with a live reverse link to this replica (label replica: its instance id), heartbeat or not.",
      labelNames: ["replica"],
      registers,
      collect() {
        this.set({ replica }, sources.links().agents);
      },
    });
    new Gauge({
      name: "clankie_fleet_reverse_links",
      help: "Open reverse-link sockets on this replica; above agents_linked while a redialed agent's old link drains.",
      labelNames: ["replica"],
      registers,
      collect() {
        this.set({ replica }, sources.links().sockets);
      },
    });
    this.deliveries = new Counter({
      name: "clankie_delivery_deliveries_total",
      help: "message_seat calls answered, by outcome (delivered, unconfirmed, undelivered, seat_offline, unknown_seat, uncertain, refused, invalid_argument).",
      labelNames: ["outcome"],
      registers,
    });
    this.latency = new Histogram({
      name: "clankie_delivery_latency_seconds",
      help: "Time from a message_seat call's arrival to its answer, any outcome (clankie_delivery_deliveries_total splits by outcome).",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30],
      registers,
    });
    this.proofAge = new Histogram({
      name: "clankie_delivery_proof_age_at_write_seconds",
      help: "Age of the freshness gate's proof when the agent wrote the message into the seat.",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.journalErrors = new Counter({
      name: "clankie_journal_errors_total",
      help: "Journal (database) failures on the delivery path, by stage: admit, before_dispatch, settle.",
      labelNames: ["stage"],
      registers,
    });
    for (const stage of ["admit", "before_dispatch", "settle"] as const) this.journalErrors.inc({ stage }, 0);

    new Gauge({
      name: "clankie_journal_receipts",
      help: "Delivery receipts in the journal, by state (retention removes old settled ones).",
      labelNames: ["state"],
      registers,
      async collect() {
        this.reset();
        for (const [state, n] of await sources.receiptsByState()) this.set({ state }, n);
      },
    });
    new Gauge({
      name: "clankie_journal_unresolved_receipts",
      help: "Unresolved delivery receipts (uncertain, unconfirmed, dispatching), by state and age range; each fences only its own resend.",
      labelNames: ["state", "age"],
      registers,
      async collect() {
        this.reset();
        for (const r of await sources.unresolvedByAge()) this.set({ state: r.state, age: r.age }, r.count);
      },
    });
    new Gauge({
      name: "clankie_journal_fences_open",
      help: "Open fences: unresolved originals whose content may not be resent to their seat.",
      registers,
      async collect() {
        this.set(await sources.fencesOpen());
      },
    });
    new Gauge({
      name: "clankie_fleet_agents_connected",
      help: "Node agents whose heartbeat is current and whose reverse link to this controller is up.",
      registers,
      async collect() {
        this.set((await sources.agents()).online);
      },
    });
    new Gauge({
      name: "clankie_fleet_agents_registered",
      help: "Node agents the controller knows, online or not.",
      registers,
      async collect() {
        this.set((await sources.agents()).registered);
      },
    });
    new Gauge({
      name: "clankie_fleet_agents_revoked",
      help: "Registered node agents whose certificate the owner revoked: offline by choice until clankie fleet remove.",
      registers,
      async collect() {
        this.set((await sources.agents()).revoked);
      },
    });
    new Gauge({
      name: "clankie_mcp_sessions",
      help: "Open MCP sessions of leads.",
      registers,
      collect() {
        this.set(sources.mcpSessions());
      },
    });
  }

  messageSeatAnswered(outcome: string, seconds: number, proofAgeMs: number | undefined): void {
    this.deliveries.inc({ outcome });
    this.latency.observe(seconds);
    if (proofAgeMs !== undefined) this.proofAge.observe(proofAgeMs / 1000);
  }

  journalError(stage: JournalStage): void {
    this.journalErrors.inc({ stage });
  }

  hireAnswered(outcome: string): void {
    this.hires.inc({ outcome });
  }

  /** One hot-path journal statement answered (or failed) after `seconds`; statement names are a closed set. */
  journalStatement(statement: string, seconds: number): void {
    this.statements.observe({ statement }, seconds);
  }

  /** One unary agent call finished; `code` is "ok" or the Connect code's name. */
  agentCall(method: string, code: string, seconds: number): void {
    this.agentCalls.observe({ method, code }, seconds);
  }
}
