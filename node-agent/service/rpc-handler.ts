/**
 * The agent's one HTTP/2 request handler for its gRPC service, as every link serves it: the
 * bearer is checked from the headers before a byte of the body is read (shared/rpc/header-gate.ts),
 * unary gRPC calls skip Connect's per-call stream pipeline (unary-server.ts), and the rest goes to
 * Connect's adapter; both run the same interceptors (the error boundary, the bearer, the trace)
 * and give each call the link session it came on (link-round-trips.ts). node-agent/main.ts serves
 * it on the reverse links; bench/rpc-agent-server.ts serves the same handler on a plain port to
 * compare RPC clients (ADR 0014).
 */
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentService } from "../../shared/gen/clankie/fleet/v1/agent_pb.js";
import { fleetErrorBoundary } from "../../shared/rpc/error-boundary.js";
import { bearerAuthInterceptor } from "../../shared/rpc/bearer-auth.js";
import { traceProcessInterceptor } from "../../shared/rpc/trace-context.js";
import { admitByHeaders } from "../../shared/rpc/header-gate.js";
import { RPC_READ_MAX_BYTES } from "../../shared/rpc/read-limits.js";
import { linkContextValues } from "./link-round-trips.js";
import { createUnaryServer } from "./unary-server.js";

export type TokenCheck = (service: string, token: string | undefined) => boolean;

export function createAgentRpcHandler(
  impl: ServiceImpl<typeof AgentService>,
  tokenCheck: TokenCheck,
): (req: Http2ServerRequest, res: Http2ServerResponse) => void {
  const interceptors = [fleetErrorBoundary(), bearerAuthInterceptor(tokenCheck), traceProcessInterceptor()];
  const connectRpc = connectNodeAdapter({
    readMaxBytes: RPC_READ_MAX_BYTES.agent,
    routes: (router) => router.service(AgentService, impl, { readMaxBytes: RPC_READ_MAX_BYTES.agent }),
    interceptors,
    // Each call knows the link it came on: its transit is bounded by that link's round trips.
    contextValues: linkContextValues,
  });
  const rpc = createUnaryServer({
    service: AgentService,
    impl,
    interceptors,
    readMaxBytes: RPC_READ_MAX_BYTES.agent,
    contextValues: linkContextValues,
    fallback: connectRpc as unknown as Parameters<typeof createUnaryServer>[0]["fallback"],
  });
  return (req, res) => {
    if (admitByHeaders(tokenCheck, req, res)) rpc(req, res);
  };
}
