/**
 * The controller's composition root: database, registry, delivery pipeline, gRPC
 * services, the leads' MCP endpoint, all on one port.
 */
import { Liveness } from "./nodes/liveness.js";
import { UnrecordedOutcomes, isHireSettle, recordSpilled, type RecordSettle } from "./delivery/unrecorded-outcomes.js";
import { isRefusedAdmission, recordRefusedAdmission } from "./journal/refused-admission.js";
import { settleDispatched } from "./delivery/settle.js";
import { settleHireOutcome } from "./journal/hire-outcome.js";
import { leaseMsOf, SEAT_TURN_WAIT_MS } from "./delivery/pipeline.js";
import { parkingFaults, type FaultPoints } from "./delivery/faults.js";
import { EventEmitter } from "node:events";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { hostname } from "node:os";
import { writeFileDurably } from "../shared/durable-file.js";
import { FleetService } from "../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { StatusService } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { OwnerService } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import type { Logger } from "../shared/logger.js";
import type { ControllerConfig } from "./config.js";
import { openDatabase, type Database } from "./db/open.js";
import { probeJournalWrite } from "./db/write-probe.js";
import { openStateDir, removeControllerRecord, writeControllerRecord } from "./state-dir.js";
import { Registry } from "./nodes/registry.js";
import { startLinkVouch } from "./nodes/link-vouch.js";
import { AgentClients } from "./nodes/agent-clients.js";
import { SeatTurns } from "./delivery/turn.js";
import type { PipelineDeps } from "./delivery/pipeline.js";
import type { HireDeps } from "./hire/hire-agent.js";
import { expireOldResults } from "./journal/call-receipts.js";
import { recoverOrphans } from "./journal/instances.js";
import { TAKEOVER_SUSPECT_AFTER_MS, TurnTakeover } from "./delivery/turn-takeover.js";
import { InstanceLease } from "./fleet/instance-lease.js";
import { Notifier } from "./delivery/notices.js";
import { purgeReadReports } from "./reports/worker-reports.js";
import { ConversationAuth } from "./leads/conversations.js";
import { FleetSecrets, MCP_SESSION_KEY } from "./leads/fleet-secrets.js";
import { bindStateDirTokens } from "./leads/state-dir-tokens.js";
import { newSessionKey, SessionIds } from "./mcp/session-ids.js";
import { startFleetIdentity } from "./fleet/fleet-identity.js";
import { createFleetService } from "./fleet/fleet-service.js";
import { createStatusService, type StatusDeps } from "./services/status-service.js";
import { createOwnerService } from "./services/owner-service.js";
import { createHealthService } from "./services/health-service.js";
import { HealthMonitor } from "./health/health-monitor.js";
import { UnauthenticatedBudget } from "./http/unauthenticated-budget.js";
import { createMcpEndpoint, MCP_PATH } from "./mcp/server.js";
import { createDashboard, DASHBOARD_PATH } from "./http/dashboard.js";
import { routeOnePort } from "./http/routes.js";
import { listen } from "./http/listener.js";
import { FleetMetrics } from "./metrics/fleet-metrics.js";
import { journalScrapeSources } from "./metrics/scrape-sources.js";
import { buildInfo } from "./metrics/build-info.js";
import { agentCallTiming } from "./metrics/agent-call-timing.js";
import { observeStatements } from "./journal/statements.js";
import { createMetricsEndpoint, METRICS_PATH } from "./metrics/metrics-endpoint.js";
import { DEFAULT_JOIN_TTL_MS, issueJoinToken } from "./fleet/join-tokens.js";
import { bootStep } from "./db/error-text.js";

export const CONTROLLER_VERSION = "0.1.0";

export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || host.startsWith("127.");
}
const RETENTION_INTERVAL_MS = 60_000;

export interface RunningController {
  readonly url: string;
  readonly mcpUrl: string;
  readonly statusUrl: string;
  /** The owner's dashboard page; open it with `#token=<owner token>`. */
  readonly dashboardUrl: string;
  /** Prometheus metrics; scraped with the owner token as a bearer token. */
  readonly metricsUrl: string;
  readonly port: number;
  readonly database: Database;
  readonly leadToken: string;
  readonly ownerToken: string;
  /** The https address agents dial (mutual TLS). */
  readonly agentUrl: string;
  /** The fleet CA certificate (PEM), also written to <state>/fleet-ca.pem. */
  readonly caCertificatePem: string;
  readonly caFile: string;
  readonly fleetId: string;
  /** True while `machine` has a live reverse link to this replica. */
  linked(machine: string): boolean;
  /** What the front door has refused or closed so far, and what it holds now (ADR 0034). */
  frontDoor(): {
    evicted: number;
    h2Abuse: number;
    h2StreamsOpened: number;
    h2StreamsAdmitted: number;
    watches: number;
    refused: number;
    connections: number;
  };
  /** A single-use join token for `machine` (what `clankie fleet enroll` prints). */
  issueJoinToken(machine: string, ttlMs?: number): Promise<string>;
  close(): Promise<void>;
}

export interface ControllerHooks {
  /** The wall clock for journal times and the 5-minute release; tests inject one. */
  now?: () => Date;
  /** Fault points a suite injects (armed per call); they replace CLANKIE_FAULT's. */
  faults?: FaultPoints;
}

export async function startController(
  config: ControllerConfig,
  logger: Logger,
  hooks: ControllerHooks = {},
): Promise<RunningController> {
  const state = openStateDir(config.stateDir);
  const database = await openDatabase(config.databaseUrl ? { url: config.databaseUrl } : { dataDir: state.dataDir });
  const { db } = database;
  const now = hooks.now ?? (() => new Date());
  const instanceId = randomUUID();
  // A database that fails or stops answering now ends the start with database_unreachable, and its pools close.
  const booting = <T>(step: string, f: () => Promise<T>) =>
    bootStep(step, f).catch((e: unknown) => {
      void database.close().catch(() => {});
      throw e;
    });
  // The lease, not a pid or a host name, says this instance is alive (ADR 0036); pid and host are for display.
  const lease = await booting("registering itself", () =>
    InstanceLease.acquire({
      db,
      id: instanceId,
      pid: process.pid,
      host: hostname(),
      leaseMs: config.instanceLeaseMs,
      renewMs: config.instanceRenewMs,
      onlyLiveIsSelf: database.driver === "pglite",
      logger,
      now,
    }),
  );
  // Outcomes a previous process decided but could not record go in first: recovery must not turn them into others.
  const spillFile = join(config.stateDir, "unrecorded-outcomes.json");
  const recordOutcome: RecordSettle = (p, writer) =>
    isHireSettle(p)
      ? settleHireOutcome(db, p, writer)
      : isRefusedAdmission(p)
        ? recordRefusedAdmission(db, p)
        : settleDispatched(db, p, writer);
  // Written by this instance, for the stopped one's calls it still owns (a call a peer took over is left as it is).
  const replayed = await booting("recording the outcomes a stopped controller had decided", () =>
    recordSpilled(spillFile, (p) => recordOutcome(p, lease.fence()), logger),
  );
  if (replayed)
    logger.warn("recorded outcomes a stopped controller had decided but not yet recorded", { count: replayed });
  const recovered = await booting("recovering the calls a stopped controller left in flight", () =>
    recoverOrphans(db, lease.fence(), database.driver === "pglite", now()),
  );
  lease.start();
  if (recovered.length)
    logger.warn("calls left in flight by a stopped controller are now uncertain; none was replayed", {
      deliveryIds: recovered,
    });
  logger.info("journal open", { driver: database.driver, location: database.location });

  // The owner and global-default tokens are the fleet's: a start adopts them, never replaces them (ADR 0037).
  const secrets = new FleetSecrets(db, config.caPassphrase);
  const tokens = await booting("adopting the fleet's tokens", () => bindStateDirTokens(db, secrets, state, logger));
  const sessionKey = await booting("reading the fleet's MCP session key", () =>
    secrets.adopt(MCP_SESSION_KEY, newSessionKey),
  );

  const changes = new EventEmitter<{ changed: [] }>();
  const registry = new Registry(db, config.heartbeatIntervalMs, now);
  const machineLiveness = new Liveness(registry);
  registry.on("changed", () => changes.emit("changed"));
  const fleet = await booting("opening the fleet's identity", () =>
    startFleetIdentity({
      db,
      registry,
      instanceId,
      host: config.agentHost,
      port: config.agentPort,
      advertiseHost: config.agentAdvertiseHost,
      tlsNames: config.tlsNames,
      caPassphrase: config.caPassphrase,
      machineCertTtlMs: config.machineCertTtlMs,
      now,
      logger: logger.child({ component: "fleet" }),
      // Peer messages from workers go through the pipeline, which exists from below on.
      reports: { onChange: () => changes.emit("changed"), pipeline: () => pipeline },
    }),
  );
  const agents = new AgentClients(fleet.links);
  // Once the fleet's interval has grown, rule 55 rests on the reverse links' pings (registry.isOnline).
  registry.judgeLinks((machine) => fleet.links.has(machine));
  // A machine answering on this replica's link stays online while its heartbeats are late (ADR 0038).
  const linkVouch = startLinkVouch({
    db,
    agents,
    linked: () => fleet.links.machines(),
    heartbeatIntervalMs: () => registry.judgedIntervalMs,
    now,
    logger: logger.child({ component: "link-vouch" }),
  });
  const caFile = join(config.stateDir, "fleet-ca.pem");
  writeFileDurably(caFile, fleet.authority.ca.certificatePem, 0o644);
  const conversationAuth = new ConversationAuth(db);
  let stopping = false;
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  // Scrape-time gauges read the journal and the registry; mcp is defined below, before any scrape.
  const mcpSessions = () => mcp.sessionCount();
  const sources = journalScrapeSources({ db: database.readDb, registry, now, mcpSessions, links: fleet.links });
  const metrics = new FleetMetrics(sources, { build: buildInfo(CONTROLLER_VERSION), replica: instanceId });
  fleet.links.intercept(agentCallTiming((method, code, seconds) => metrics.agentCall(method, code, seconds)));
  observeStatements(db, (name, seconds) => metrics.journalStatement(name, seconds));
  const takeover = new TurnTakeover({
    db,
    agents,
    fence: () => lease.fence(),
    logger: logger.child({ component: "turn-takeover" }),
    onTaken: () => pipeline.turns.wakeAll(),
  });
  const pipeline: PipelineDeps = {
    db,
    agents,
    turns: new SeatTurns(
      db,
      leaseMsOf(config.deliverTimeoutMs),
      instanceId,
      (what, e) => logger.warn(what, { error: e.message }),
      () => lease.fence(),
      // ADR 0043: a peer whose lease renewal is a second overdue is asked about at its seats' agents.
      database.driver === "pglite"
        ? undefined
        : {
            afterMs: config.instanceRenewMs + TAKEOVER_SUSPECT_AFTER_MS,
            found: (seatId, s) => takeover.suspect(seatId, s),
          },
    ),
    logger: logger.child({ component: "delivery" }),
    now,
    isStopping: () => stopping,
    shutdownSignal: shutdown.signal,
    liveness: machineLiveness,
    onJournalChange: () => changes.emit("changed"),
    deliverTimeoutMs: config.deliverTimeoutMs,
    seatTurnWaitMs: config.seatTurnWaitMs ?? SEAT_TURN_WAIT_MS,
    instanceId,
    lease,
    unrecorded: new UnrecordedOutcomes(logger.child({ component: "journal-retry" }), recordOutcome, spillFile),
    track: (p) => {
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p)).catch(() => {});
      return p;
    },
    hooks: {
      faults: hooks.faults ?? parkingFaults(config.fault, shutdown.signal),
      metrics,
      onDelivered: (seatId) => notifier.delivered(seatId),
      onFenceChange: (seatId) => notifier.fenceChanged(seatId),
    },
  };
  const notifier = new Notifier(pipeline);
  const hires: HireDeps = { ...pipeline, registry, hireTimeoutMs: config.hireTimeoutMs };
  // Reads have their own pool: a stuck admission never starves list_seats or the dashboard.
  const statusDeps: StatusDeps = { db: database.readDb, registry, now, changes };

  // Health answers from this cache (ADR 0034). "agents" is serving when some machine is connected: a current
  // heartbeat and a live reverse link here. "database" is SERVING only while the journal can take a write (a read
  // alone would pass on a full disk or a read-only replica).
  const health = new HealthMonitor([StatusService.typeName, OwnerService.typeName, FleetService.typeName], {
    probeJournal: () => probeJournalWrite(db, instanceId, database.driver),
    agentOnline: () => registry.anyOnline(fleet.links.linkedMachines()),
    isStopping: () => stopping,
  });
  await health.start();
  // "agents" follows links as they come and go, not only at the next probe.
  fleet.links.on("linked", () => health.refresh());
  fleet.links.on("unlinked", () => health.refresh());
  registry.on("registered", () => health.refresh());
  const unauthenticated = new UnauthenticatedBudget(config.unauthenticatedLimits);

  const mcp = createMcpEndpoint({
    pipeline,
    status: statusDeps,
    conversations: conversationAuth,
    sessionIds: new SessionIds(sessionKey),
    logger,
    version: CONTROLLER_VERSION,
    hires,
    limits: { sessionIdleMs: config.mcpSessionIdleMs, sessionsPerConversation: config.mcpSessionsPerConversation },
  });
  const { http1, rpc, screen } = routeOnePort({
    ownerToken: tokens.ownerToken,
    unauthenticated,
    services: {
      fleet: createFleetService({
        db,
        authority: fleet.authority,
        registry,
        now,
        agentUrl: () => fleet.agentUrl,
        cut: (m) => fleet.listener.cut(m),
        logger: logger.child({ component: "fleet" }),
      }),
      status: createStatusService(statusDeps),
      owner: createOwnerService({ pipeline, db, registry, agents, conversations: conversationAuth, secrets }),
      health: createHealthService(health),
    },
    monitor: health,
    dashboard: createDashboard(),
    metrics: createMetricsEndpoint(metrics, tokens.ownerToken),
    mcp,
    logger,
  });
  // Leads and the owner stay on plain HTTP on loopback; off loopback the port is TLS (fleet CA).
  const tls = isLoopbackHost(config.host)
    ? undefined
    : { cert: fleet.serverCertificatePem + fleet.authority.ca.certificatePem, key: fleet.serverPrivateKeyPem };
  const listener = await listen(config.host, config.port, http1, { handler: rpc, screen }, config.listenerLimits, tls);
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `${tls ? "https" : "http"}://${host}:${listener.port}`;
  const record = {
    pid: process.pid,
    url,
    mcpUrl: `${url}${MCP_PATH}`,
    statusUrl: url,
    agentUrl: fleet.agentUrl,
    database: database.location,
    startedAt: new Date().toISOString(),
  };
  writeControllerRecord(config.stateDir, record);

  const retention = setInterval(() => {
    expireOldResults(db).catch((e: Error) => logger.warn("retention pass failed", { error: e.message }));
    purgeReadReports(db, now()).catch((e: Error) => logger.warn("report retention pass failed", { error: e.message }));
  }, RETENTION_INTERVAL_MS);
  retention.unref();
  // Notices that never reached their seat get one more try once the seat's agent is back.
  registry.on("registered", () => notifier.sweep());
  // An agent registers before its reverse link is up (ADR 0021): sweep again once it is.
  fleet.links.on("linked", () => notifier.sweep());
  await expireOldResults(db).catch((e: Error) => logger.warn("retention pass failed", { error: e.message }));
  logger.info("controller listening", record);

  return {
    url,
    mcpUrl: record.mcpUrl,
    statusUrl: url,
    dashboardUrl: `${url}${DASHBOARD_PATH}`,
    metricsUrl: `${url}${METRICS_PATH}`,
    port: listener.port,
    database,
    leadToken: tokens.leadToken,
    ownerToken: tokens.ownerToken,
    agentUrl: fleet.agentUrl,
    caCertificatePem: fleet.authority.ca.certificatePem,
    caFile,
    fleetId: fleet.authority.ca.fleetId,
    linked: (machine) => fleet.links.has(machine),
    frontDoor: () => ({
      ...listener.closedForCause(),
      ...unauthenticated.counts(),
      connections: listener.connections(),
    }),
    issueJoinToken: async (machine, ttlMs = DEFAULT_JOIN_TTL_MS) =>
      (await issueJoinToken(db, machine, ttlMs, fleet.authority.ca.fingerprint, now())).token,
    async close() {
      if (stopping) return;
      stopping = true;
      clearInterval(retention);
      linkVouch.stop();
      health.close();
      machineLiveness.close();
      const settled = Promise.allSettled([...inFlight]);
      const grace = new Promise((r) => setTimeout(r, config.shutdownGraceMs).unref());
      await Promise.race([settled, grace]);
      // Whatever is still waiting on an agent now answers uncertain, and is recorded so.
      shutdown.abort();
      await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => setTimeout(r, 2000).unref())]);
      await mcp.closeAll();
      await listener.close();
      await Promise.race([notifier.idle(), new Promise((r) => setTimeout(r, 1000).unref())]);
      agents.closeAll();
      await fleet.close();
      // A last try for outcomes the journal missed; what still fails, boot recovery marks uncertain.
      await Promise.race([pipeline.unrecorded.flush(), new Promise((r) => setTimeout(r, 1000).unref())]);
      pipeline.unrecorded.close();
      await lease.close();
      await database.close();
      removeControllerRecord(config.stateDir, process.pid);
    },
  };
}
