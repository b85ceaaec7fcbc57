/**
 * The controller's health, probed in the background and held in memory (issue 32, ADR 0034).
 * grpc.health.v1 Check, List and Watch, and /readyz, answer from what this holds: a caller
 * without a token costs a map lookup, never a journal statement. One probe per process, every
 * `intervalMs` (2 s: a load balancer's usual check period, and at most one write-probe
 * transaction, always rolled back, per 2 s against the journal); a probe that overruns its
 * interval is not stacked, the next one starts after it ends.
 *
 * Components: "database" is SERVING while the journal can take a write; "agents" while at least
 * one node agent is online and linked; the whole server ("") and each named service while the
 * journal answers and no stop has begun (a controller without agents still admits and refuses
 * calls correctly, so it is not down).
 */
import { EventEmitter } from "node:events";
import { HealthCheckResponse_ServingStatus as Serving } from "../../shared/gen/grpc/health/v1/health_pb.js";

export const HEALTH_DATABASE = "database";
export const HEALTH_AGENTS = "agents";
export const HEALTH_PROBE_INTERVAL_MS = 2_000;
/**
 * A probe that has not ended by then counts as failed, and the next one starts on time: a
 * statement the journal never answers must not stop the monitor at its last answer.
 */
export const HEALTH_PROBE_TIMEOUT_MS = 8_000;

class ProbeTimedOut extends Error {}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimedOut(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export interface HealthProbes {
  /** Throws when the journal cannot take a write now. */
  probeJournal: () => Promise<void>;
  /** Whether some node agent is online and linked now. */
  agentOnline: () => Promise<boolean>;
  isStopping: () => boolean;
}

export interface HealthSnapshot {
  /** Every component this server answers for, by name ("" is the whole server). */
  statuses: ReadonlyMap<string, Serving>;
  /** When the last probe ended (ms since the epoch); 0 before the first. */
  probedAt: number;
  /** Why the database is not serving, when it is not. */
  databaseError?: string | undefined;
}

export class HealthMonitor {
  private readonly events = new EventEmitter();
  private statuses = new Map<string, Serving>();
  private probedAt = 0;
  private databaseError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(
    private readonly services: readonly string[],
    private readonly probes: HealthProbes,
    private readonly intervalMs = HEALTH_PROBE_INTERVAL_MS,
  ) {
    // Many Watch streams listen at once; each is counted and bounded by the front door.
    this.events.setMaxListeners(0);
    for (const name of this.names()) this.statuses.set(name, Serving.NOT_SERVING);
  }

  /** The component names, "" first. */
  names(): string[] {
    return ["", HEALTH_DATABASE, HEALTH_AGENTS, ...this.services];
  }

  /** Runs the first probe now and then one every interval, until close. */
  start(): Promise<void> {
    const first = this.probeOnce();
    const loop = () => {
      if (this.closed) return;
      this.timer = setTimeout(() => void this.probeOnce().finally(loop), this.intervalMs);
      this.timer.unref();
    };
    void first.finally(loop);
    return first;
  }

  /** A component's status now; undefined for a name this server does not answer for. */
  status(service: string): Serving | undefined {
    if (!this.statuses.has(service)) return undefined;
    // A stop is seen at once, not at the next probe: a load balancer drains this replica now.
    if (this.probes.isStopping()) return Serving.NOT_SERVING;
    return this.statuses.get(service);
  }

  snapshot(): HealthSnapshot {
    const statuses = new Map<string, Serving>();
    for (const name of this.names()) statuses.set(name, this.status(name)!);
    return { statuses, probedAt: this.probedAt, databaseError: this.databaseError };
  }

  /** Calls `listener` after every probe that changed some status; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.events.on("change", listener);
    return () => this.events.off("change", listener);
  }

  /** Runs a probe unless one is running; resolves when it ends. */
  probeOnce(): Promise<void> {
    this.running ??= this.probe().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * Something a status depends on changed (an agent linked or left): probe again now, or right
   * after the probe running now, which may have read the state from before the change.
   */
  refresh(): void {
    if (this.closed) return;
    if (!this.running) {
      void this.probeOnce();
      return;
    }
    if (this.again) return;
    this.again = true;
    void this.running.finally(() => {
      this.again = false;
      void this.probeOnce();
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.events.emit("change");
    this.events.removeAllListeners();
  }

  private async probe(): Promise<void> {
    // Side by side: a journal that answers nothing holds both until the timeout, not one after the other.
    const [journal, agents] = await Promise.all([
      within(this.probes.probeJournal(), HEALTH_PROBE_TIMEOUT_MS).then(
        () => undefined,
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      ),
      within(this.probes.agentOnline(), HEALTH_PROBE_TIMEOUT_MS).catch(() => false),
    ]);
    const up = journal === undefined ? Serving.SERVING : Serving.NOT_SERVING;
    const next = new Map<string, Serving>();
    for (const name of this.names()) next.set(name, up);
    next.set(HEALTH_AGENTS, agents ? Serving.SERVING : Serving.NOT_SERVING);
    const changed = [...next].some(([name, s]) => this.statuses.get(name) !== s);
    this.statuses = next;
    this.databaseError = journal;
    this.probedAt = Date.now();
    if (changed) this.events.emit("change");
  }
}
