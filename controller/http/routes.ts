/**
 * What each request on the controller's one port reaches: the owner's and the status services over
 * Connect/gRPC, behind the bearer check made from the headers alone and, for calls that need no token,
 * the unauthenticated budget; and on HTTP/1.1 the dashboard, /metrics, the probes, bearer discovery and
 * the leads' MCP endpoint. The services themselves are built in controller/main.ts.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { FleetService } from "../../shared/gen/clankie/fleet/v1/fleet_pb.js";
import { StatusService } from "../../shared/gen/clankie/fleet/v1/status_pb.js";
import { OwnerService } from "../../shared/gen/clankie/fleet/v1/owner_pb.js";
import { Health } from "../../shared/gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../../shared/gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../shared/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { bearerAuthInterceptor } from "../../shared/rpc/bearer-auth.js";
import { fleetErrorBoundary } from "../../shared/rpc/error-boundary.js";
import { admitByHeaders, serviceOfPath } from "../../shared/rpc/header-gate.js";
import { RPC_READ_MAX_BYTES } from "../../shared/rpc/read-limits.js";
import { tokensEqual } from "../../shared/tokens.js";
import type { Logger } from "../../shared/logger.js";
import { databaseFailure } from "../db/error-text.js";
import { createReflectionV1, createReflectionV1alpha, ReflectionIndex } from "../services/reflection-service.js";
import type { HealthMonitor } from "../health/health-monitor.js";
import { HEALTHZ_PATH, READYZ_PATH, serveProbe } from "../health/probe-endpoints.js";
import { METRICS_PATH } from "../metrics/metrics-endpoint.js";
import { MCP_PATH } from "../mcp/server.js";
import { isDiscoveryPath, serveDiscovery } from "./bearer-discovery.js";
import { DASHBOARD_PATH, isDashboardPath } from "./dashboard.js";
import type { UnauthenticatedBudget } from "./unauthenticated-budget.js";
import type { StreamScreen } from "./h2-session-guard.js";

type Http1 = (req: IncomingMessage, res: ServerResponse) => void;

const SERVED = `${DASHBOARD_PATH}, ${MCP_PATH}, ${METRICS_PATH}, ${HEALTHZ_PATH}, ${READYZ_PATH} and gRPC (Connect)`;

/** Any other path: a 404 that says what this port serves, rather than an empty body (issue 37). */
const notFound: NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]> = (req, res) => {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const message = `nothing at ${path.slice(0, 200)}; this port serves ${SERVED}`;
  const body = `${JSON.stringify({ code: "not_found", message })}\n`;
  res.writeHead(404, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
};

export interface OnePort {
  ownerToken: string;
  unauthenticated: UnauthenticatedBudget;
  services: {
    fleet: ServiceImpl<typeof FleetService>;
    status: ServiceImpl<typeof StatusService>;
    owner: ServiceImpl<typeof OwnerService>;
    health: ServiceImpl<typeof Health>;
  };
  monitor: HealthMonitor;
  dashboard: (req: IncomingMessage, res: ServerResponse, path: string) => void;
  metrics: Http1;
  mcp: { handle(req: IncomingMessage, res: ServerResponse): Promise<void> };
  logger: Logger;
}

export function routeOnePort(o: OnePort): {
  http1: Http1;
  rpc: (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;
  /** HTTP/2 streams that need no token are judged by the budget here, before any request object exists. */
  screen: StreamScreen;
} {
  // Agents have no business on this port: their gateway is the agent port, over mutual TLS.
  const ownerOnly = new Set([StatusService.typeName, OwnerService.typeName, FleetService.typeName]);
  const tokenCheck = (service: string, token: string | undefined) => {
    if (ownerOnly.has(service)) return tokensEqual(o.ownerToken, token);
    return undefined;
  };
  const connectRpc = connectNodeAdapter({
    // Each service reads at most its own limit; a longer body is RESOURCE_EXHAUSTED before it is buffered.
    readMaxBytes: RPC_READ_MAX_BYTES.default,
    routes: (router) => {
      router.service(FleetService, o.services.fleet, { readMaxBytes: RPC_READ_MAX_BYTES.owner });
      router.service(StatusService, o.services.status, { readMaxBytes: RPC_READ_MAX_BYTES.status });
      router.service(OwnerService, o.services.owner, { readMaxBytes: RPC_READ_MAX_BYTES.owner });
      router.service(Health, o.services.health, { readMaxBytes: RPC_READ_MAX_BYTES.health });
      // Reflection is open like health: it describes the contract, every call still checks its token.
      const reflection = new ReflectionIndex([
        StatusService,
        OwnerService,
        FleetService,
        Health,
        ReflectionV1,
        ReflectionV1alpha,
      ]);
      router.service(ReflectionV1, createReflectionV1(reflection));
      router.service(ReflectionV1alpha, createReflectionV1alpha(reflection));
    },
    interceptors: [fleetErrorBoundary(databaseFailure), bearerAuthInterceptor(tokenCheck)],
    fallback: notFound,
  });
  // Authentication from the headers alone, before connect-node reads the body.
  // Calls that need no token draw from the unauthenticated budget first.
  const needsNoToken = (url: string | undefined) => tokenCheck(serviceOfPath(url) ?? "", undefined) === undefined;
  // Calls that need no token draw from the unauthenticated budget first: over HTTP/2 in `screen`, already.
  const rpc = ((req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    if (!admitByHeaders(tokenCheck, req, res)) return;
    const http2 = (req as Http2ServerRequest).stream !== undefined;
    if (!http2 && needsNoToken(req.url) && !o.unauthenticated.admit(req, res)) return;
    connectRpc(req as IncomingMessage, res as ServerResponse);
  }) as typeof connectRpc;
  const screen: StreamScreen = (stream, headers) => {
    const path = headers[":path"];
    return needsNoToken(path) ? o.unauthenticated.screen(stream, headers) : "pass";
  };
  const http1 = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (isDashboardPath(path)) return o.dashboard(req, res, path);
    // A browser pointed at the bare address lands on the dashboard, which asks for the owner token.
    if (path === "/" && (req.method === "GET" || req.method === "HEAD")) {
      res.writeHead(302, { location: DASHBOARD_PATH, "content-type": "text/plain; charset=utf-8" });
      return res.end(
        req.method === "HEAD" ? undefined : `the dashboard is at ${DASHBOARD_PATH}; this port serves ${SERVED}\n`,
      );
    }
    if (path === METRICS_PATH) return o.metrics(req, res);
    if (path === HEALTHZ_PATH || path === READYZ_PATH) return serveProbe(req, res, path, o.monitor);
    if (isDiscoveryPath(path)) return serveDiscovery(req, res, path, MCP_PATH);
    if (path === MCP_PATH) {
      o.mcp.handle(req, res).catch((e: Error) => {
        o.logger.error("mcp request failed", { error: e.message });
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: "internal error" }, id: null }));
      });
      return;
    }
    rpc(req, res);
  };
  return { http1, rpc, screen };
}
