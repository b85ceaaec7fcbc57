/**
 * A refused certificate on the agent's gateway socket gets a typed gRPC answer before the socket
 * closes (issue 37 item 1): a revoked agent must be able to tell "revoked" from a dropped link,
 * or it redials forever and logs only ECONNRESET. The answer is trailers-only, so no body is
 * read; the socket lives at most REFUSAL_LINGER_MS whatever the peer sends.
 */
import { createServer as createHttp2Server } from "node:http2";
import type { TLSSocket } from "node:tls";
import { ErrorCode, FleetError } from "../../shared/errors.js";

const REFUSAL_LINGER_MS = 2000;

export function answerRefusal(socket: TLSSocket, revoked: boolean, reason: string): void {
  const err = new FleetError(revoked ? ErrorCode.MachineRevoked : ErrorCode.Unauthenticated, reason).toConnectError();
  const grpcStatus = String(err.code);
  const grpcMessage = encodeURIComponent(err.rawMessage);
  const server = createHttp2Server({}, (req, res) => {
    res.writeHead(200, { "content-type": "application/grpc", "grpc-status": grpcStatus, "grpc-message": grpcMessage });
    res.end();
    req.resume();
  });
  const linger = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
  linger.unref();
  socket.once("close", () => clearTimeout(linger));
  server.emit("connection", socket);
  socket.resume();
}
