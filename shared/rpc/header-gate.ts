/**
 * The Connect/gRPC routes' front door: the bearer token is checked from the request headers
 * alone, before connect-node reads a byte of the body (issue 11: a 300 MB body with no token
 * was buffered whole before its 401). The bearer interceptor still runs behind it.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Stream } from "node:http2";
import { bearerFrom } from "../tokens.js";
import type { TokenCheck } from "./bearer-auth.js";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** The service a Connect/gRPC path names: "/pkg.Service/Method" → "pkg.Service". */
export function serviceOfPath(url: string | undefined): string | undefined {
  const path = (url ?? "/").split("?")[0] ?? "/";
  const m = /^\/([A-Za-z_][\w.]*)\/[A-Za-z_]\w*$/.exec(path);
  return m?.[1];
}

/** Answers `unauthenticated` in the caller's protocol and returns false, or returns true to proceed. */
export function admitByHeaders(check: TokenCheck, req: Req, res: Res): boolean {
  const service = serviceOfPath(req.url);
  if (!service) return true;
  const header = req.headers.authorization;
  if (check(service, bearerFrom(header)) !== false) return true;
  const message = "missing or wrong bearer token";
  refuse(req, res, {
    grpcStatus: 16,
    httpStatus: 401,
    code: "unauthenticated",
    message,
    headers: { "www-authenticate": 'Bearer realm="clankie"' },
  });
  return false;
}

export interface Refusal {
  /** The gRPC status code (16 UNAUTHENTICATED, 8 RESOURCE_EXHAUSTED). */
  grpcStatus: number;
  /** The HTTP status for Connect and plain HTTP callers. */
  httpStatus: number;
  /** The Connect error code, as its JSON error names it. */
  code: string;
  message: string;
  headers?: Record<string, string>;
}

/** Answers a refusal in the caller's protocol, without reading the body. */
export function refuse(req: Req, res: Res, r: Refusal): void {
  const type = String(req.headers["content-type"] ?? "");
  if (type.startsWith("application/grpc")) {
    const stream = (req as Http2ServerRequest).stream;
    if (stream) return refuseStream(stream, type, r);
    (res as ServerResponse).writeHead(200, grpcStatusHeaders(type, r));
    res.end();
    return;
  }
  (res as ServerResponse).writeHead(r.httpStatus, { "content-type": "application/json", ...r.headers });
  res.end(JSON.stringify({ code: r.code, message: r.message }));
}

/**
 * The same on a raw HTTP/2 stream, with no request or response object (the front door refuses
 * some streams before the compat layer builds them, unauthenticated-budget.ts).
 */
export function refuseStream(stream: ServerHttp2Stream, contentType: string, r: Refusal): void {
  if (stream.headersSent || stream.destroyed) return;
  if (contentType.startsWith("application/grpc")) {
    // The status must ride on a HEADERS frame that ends the stream (grpc-js reads headers
    // followed by an empty DATA frame as INTERNAL).
    stream.respond({ ":status": 200, ...grpcStatusHeaders(contentType, r) }, { endStream: true });
    return;
  }
  stream.respond({ ":status": r.httpStatus, "content-type": "application/json", ...r.headers });
  stream.end(JSON.stringify({ code: r.code, message: r.message }));
}

/** gRPC "trailers-only": HTTP 200 with the status in the headers. */
function grpcStatusHeaders(contentType: string, r: Refusal): Record<string, string> {
  return {
    "content-type": contentType.startsWith("application/grpc-web") ? "application/grpc-web+proto" : "application/grpc",
    "grpc-status": String(r.grpcStatus),
    "grpc-message": encodeURIComponent(r.message),
  };
}
