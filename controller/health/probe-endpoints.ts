/**
 * Plain-HTTP probes for load balancers and orchestrators (ADR 0034), unauthenticated and cheap:
 * `/healthz` is liveness (this process answers; no database work, so a journal outage never
 * gets a live replica restarted), `/readyz` is readiness, read from the health monitor's cache
 * (503 while the journal cannot take a write or a stop has begun, so a load balancer drains it).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HealthCheckResponse_ServingStatus as Serving } from "../../shared/gen/grpc/health/v1/health_pb.js";
import type { HealthMonitor } from "./health-monitor.js";

export const HEALTHZ_PATH = "/healthz";
export const READYZ_PATH = "/readyz";

export function serveProbe(req: IncomingMessage, res: ServerResponse, path: string, monitor: HealthMonitor): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD", "content-type": "application/json" });
    res.end(JSON.stringify({ code: "method_not_allowed", message: `${path} answers GET and HEAD` }));
    return;
  }
  let status = 200;
  let body: unknown = { status: "ok" };
  if (path === READYZ_PATH) {
    const snap = monitor.snapshot();
    const components: Record<string, string> = {};
    for (const [name, s] of snap.statuses) components[name === "" ? "server" : name] = Serving[s] ?? String(s);
    const ready = snap.statuses.get("") === Serving.SERVING;
    status = ready ? 200 : 503;
    const probeAgeMs = snap.probedAt === 0 ? null : Date.now() - snap.probedAt;
    body = {
      status: ready ? "ready" : "not_ready",
      components,
      probeAgeMs,
      ...(snap.databaseError ? { databaseError: snap.databaseError.slice(0, 200) } : {}),
    };
  }
  const text = JSON.stringify(body) + "\n";
  res.writeHead(status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
  });
  res.end(req.method === "HEAD" ? undefined : text);
}
