/**
 * The controller's composition root: database, registry, delivery pipeline, gRPC
 * services, the leads' MCP endpoint, all on one port.
 */
import { UnrecordedOutcomes } from "./delivery/unrecorded-outcomes.js";
import { EventEmitter } from "node:events";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentGatewayService } from "../shared/gen/clankie/fleet/v1/gateway_pb.js";
import { StatusService } from "../shared/gen/clankie/fleet/v1/status_pb.js";
import { OwnerService } from "../shared/gen/clankie/fleet/v1/owner_pb.js";
import { Health } from "../shared/gen/grpc/health/v1/health_pb.js";
import { bearerAuthInterceptor } from "../shared/rpc/bearer-auth.js";
import { tokenHash, tokensEqual } from "../shared/tokens.js";
import type { Logger } from "../shared/logger.js";
import type { ControllerConfig } from "./config.js";
import { openDatabase, type Database } from "./db/open.js";
import { openStateDir, removeControllerRecord, writeControllerRecord } from "./state-dir.js";
import { Registry } from "./nodes/registry.js";
import { AgentClients } from "./nodes/agent-clients.js";
import { SeatTurns } from "./delivery/seat-turns.js";
import type { PipelineDeps } from "./delivery/message-seat.js";
import { expireOldResults } from "./journal/call-receipts.js";
import { heartbeatInstance, recoverOrphans, registerInstance, removeInstance } from "./journal/instances.js";
import { Notifier } from "./delivery/notices.js";
import { purgeReadReports } from "./reports/worker-reports.js";
import { ConversationAuth, DEFAULT_CONVERSATION, issueLeadToken } from "./leads/conversations.js";
import { conversations } from "./db/schema.js";
import { eq } from "drizzle-orm";
import { createAgentGatewayService } from "./services/agent-gateway-service.js";
import { createStatusService, type StatusDeps } from "./services/status-service.js";
import { createOwnerService } from "./services/owner-service.js";
import { createHealthService } from "./services/health-service.js";
import { createMcpEndpoint, MCP_PATH } from "./mcp/server.js";
import { createDashboard, DASHBOARD_PATH, isDashboardPath } from "./http/dashboard.js";
import { listen } from "./http/listener.js";

export const CONTROLLER_VERSION = "0.1.0";
const RETENTION_INTERVAL_MS = 60_000;
const INSTANCE_HEARTBEAT_MS = 5_000;

export interface RunningController {
  readonly url: string;
  readonly mcpUrl: string;
  readonly statusUrl: string;
  /** The owner's dashboard page; open it with `#token=<owner token>`. */
  readonly dashboardUrl: string;
  readonly port: number;
  readonly database: Database;
  readonly leadToken: string;
  readonly ownerToken: string;
  readonly fleetToken: string;
  close(): Promise<void>;
}

export interface ControllerHooks {
  /** The wall clock for journal times and the 5-minute release; tests inject one. */
  now?: () => Date;
}

export async function startController(config: ControllerConfig, logger: Logger, hooks: ControllerHooks = {}): Promise<RunningController> {
  const state = openStateDir(config.stateDir);
  const database = await openDatabase(config.databaseUrl ? { url: config.databaseUrl } : { dataDir: state.dataDir });
  const { db } = database;
  const now = hooks.now ?? (() => new Date());
  const instanceId = randomUUID();
  await registerInstance(db, instanceId, process.pid, hostname());
  const recovered = await recoverOrphans(db, instanceId, database.driver === "pglite", now());
  if (recovered.length) logger.warn("calls left in flight by a stopped controller are now uncertain; none was replayed", { deliveryIds: recovered });
  logger.info("journal open", { driver: database.driver, location: database.location });

  // The state dir's lead token always opens the default conversation.
  const [existing] = await db.select().from(conversations).where(eq(conversations.id, DEFAULT_CONVERSATION));
  if (existing?.tokenHash !== tokenHash(state.leadToken)) await issueLeadToken(db, DEFAULT_CONVERSATION, state.leadToken);

  const changes = new EventEmitter<{ changed: [] }>();
  const registry = new Registry(db, config.heartbeatIntervalMs, now);
  registry.on("changed", () => changes.emit("changed"));
  const agents = new AgentClients();
  const conversationAuth = new ConversationAuth(db);
  let stopping = false;
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  const pipeline: PipelineDeps = {
    db,
    agents,
    turns: new SeatTurns(),
    logger: logger.child({ component: "delivery" }),
    now,
    isStopping: () => stopping,
    shutdownSignal: shutdown.signal,
    onJournalChange: () => changes.emit("changed"),
    deliverTimeoutMs: config.deliverTimeoutMs,
    instanceId,
    fault: config.fault,
    onDelivered: (seatId) => notifier.sweep(seatId),
    unrecorded: new UnrecordedOutcomes(logger.child({ component: "journal-retry" })),
    track: (p) => {
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p)).catch(() => {});
      return p;
    },
  };
  const notifier = new Notifier(pipeline);
  const statusDeps: StatusDeps = { db, registry, now, changes };

  const ownerOnly = new Set([StatusService.typeName, OwnerService.typeName]);
  const rpc = connectNodeAdapter({
    routes: (router) => {
      router.service(AgentGatewayService, createAgentGatewayService(registry, logger.child({ component: "gateway" }), { db, now, onChange: () => changes.emit("changed") }));
      router.service(StatusService, createStatusService(statusDeps));
      router.service(OwnerService, createOwnerService({ pipeline, db, registry, agents, conversations: conversationAuth }));
      router.service(Health, createHealthService({ services: [AgentGatewayService.typeName, StatusService.typeName, OwnerService.typeName], pingDatabase: database.ping, isStopping: () => stopping }));
    },
    interceptors: [
      bearerAuthInterceptor((service, token) => {
        if (service === AgentGatewayService.typeName) return tokensEqual(state.fleetToken, token);
        if (ownerOnly.has(service)) return tokensEqual(state.ownerToken, token);
        return undefined;
      }),
    ],
  });
  const mcp = createMcpEndpoint({ pipeline, status: statusDeps, conversations: conversationAuth, logger, version: CONTROLLER_VERSION });

  const dashboard = createDashboard();
  const http1 = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (isDashboardPath(path)) return dashboard(req, res, path);
    if (path === MCP_PATH) {
      mcp.handle(req, res).catch((e: Error) => {
        logger.error("mcp request failed", { error: e.message });
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: "internal error" }, id: null }));
      });
      return;
    }
    rpc(req, res);
  };
  const listener = await listen(config.host, config.port, http1, rpc);
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${listener.port}`;
  const record = { pid: process.pid, url, mcpUrl: `${url}${MCP_PATH}`, statusUrl: url, database: database.location, startedAt: new Date().toISOString() };
  writeControllerRecord(config.stateDir, record);

  const retention = setInterval(() => {
    expireOldResults(db).catch((e: Error) => logger.warn("retention pass failed", { error: e.message }));
    purgeReadReports(db, now()).catch((e: Error) => logger.warn("report retention pass failed", { error: e.message }));
  }, RETENTION_INTERVAL_MS);
  retention.unref();
  // Heartbeat this instance, and recover the in-flight calls of replicas that died.
  const liveness = setInterval(() => {
    heartbeatInstance(db, instanceId)
      .then(() => (database.driver === "postgres" ? recoverOrphans(db, instanceId, false, now()) : []))
      .then((ids) => ids.length && logger.warn("a stopped replica's in-flight calls are now uncertain", { deliveryIds: ids }))
      .catch((e: Error) => logger.warn("instance heartbeat failed", { error: e.message }));
  }, INSTANCE_HEARTBEAT_MS);
  liveness.unref();
  // Notices that never reached their seat get one more try once the seat's agent is back.
  registry.on("registered", () => notifier.sweep());
  await expireOldResults(db).catch((e: Error) => logger.warn("retention pass failed", { error: e.message }));
  logger.info("controller listening", record);

  return {
    url,
    mcpUrl: record.mcpUrl,
    statusUrl: url,
    dashboardUrl: `${url}${DASHBOARD_PATH}`,
    port: listener.port,
    database,
    leadToken: state.leadToken,
    ownerToken: state.ownerToken,
    fleetToken: state.fleetToken,
    async close() {
      if (stopping) return;
      stopping = true;
      clearInterval(retention);
      clearInterval(liveness);
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
      // A last try for outcomes the journal missed; what still fails, boot recovery marks uncertain.
      await Promise.race([pipeline.unrecorded.flush(), new Promise((r) => setTimeout(r, 1000).unref())]);
      pipeline.unrecorded.close();
      await removeInstance(db, instanceId).catch(() => {});
      await database.close();
      removeControllerRecord(config.stateDir, process.pid);
    },
  };
}
