/**
 * GET /metrics in Prometheus text format. It requires the owner token (Authorization: Bearer),
 * like every other owner read: counts of seats and receipts are the owner's business. Scrape
 * with `authorization: { type: Bearer, credentials_file: <state dir>/owner.token }`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { bearerFrom, tokensEqual } from "../../shared/tokens.js";
import type { FleetMetrics } from "./fleet-metrics.js";

export const METRICS_PATH = "/metrics";

export function createMetricsEndpoint(
  metrics: FleetMetrics,
  ownerToken: string,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res
        .writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" })
        .end("method not allowed\n");
      return;
    }
    if (!tokensEqual(ownerToken, bearerFrom(req.headers.authorization))) {
      res
        .writeHead(401, {
          "www-authenticate": 'Bearer realm="clankie-owner"',
          "content-type": "text/plain; charset=utf-8",
        })
        .end("the owner token is required: Authorization: Bearer <owner.token>\n");
      return;
    }
    metrics.registry.metrics().then(
      (body) => {
        res.writeHead(200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" });
        res.end(req.method === "HEAD" ? undefined : body);
      },
      (e: Error) => {
        // A scrape that cannot read the journal fails whole rather than reporting made-up zeros.
        res
          .writeHead(503, { "content-type": "text/plain; charset=utf-8" })
          .end(`metrics unavailable: ${e.message.split("\n")[0]}\n`);
      },
    );
  };
}
