/**
 * The agent's unary gRPC calls (Deliver above all) without Connect's per-call stream pipeline
 * (issue 17 item 2, ADR 0014 addendum 3). The service implementation, its interceptors (error
 * boundary, bearer check, trace), the handler context's shape and the gRPC status trailers are
 * Connect's own (`HandlerContext`, `invokeUnaryImplementation`, `setTrailerStatus`);
 * what is skipped is the async-iterable chain, the per-call serialization lookup and the
 * request/response conversions that connect-node builds for every call — about a third of the
 * agent's CPU per delivery in the profile. Anything else (another protocol or content type,
 * a compressed body, a streaming method, an unknown path) goes to Connect's adapter unchanged.
 */
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { DescMessage, DescMethodUnary, DescService, MessageShape } from "@bufbuild/protobuf";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createMethodImplSpec,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { readBodyBounded } from "../../shared/read-body.js";

type Handler = (req: Http2ServerRequest, res: Http2ServerResponse) => void;

/** Ends a successful call's context: a reason given once, so no DOMException is built per call. */
const CALL_DONE = new ConnectError("call completed", Code.Canceled);
// Connect's gRPC handler accepts a deadline up to this (its default maxTimeoutMs: none).
const NO_MAX_TIMEOUT = Number.MAX_SAFE_INTEGER;

function firstValue(v: string | string[] | undefined): string | null {
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

function nodeHeaders(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => (out[k] = v));
  return out;
}

/** The request's headers without the pseudo-headers, as the record Connect's context copies once. */
function requestHeaders(req: Http2ServerRequest): Record<string, string> {
  const out: Record<string, string> = {};
  const h = req.headers;
  for (const k in h) {
    if (k.charCodeAt(0) === 58 /* ":" pseudo-header */) continue;
    const v = h[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  }
  return out;
}

/** The body's one uncompressed message, or the error Connect's gRPC handler gives for it. */
function unwrap(body: Buffer): Uint8Array | ConnectError {
  if (body.length === 0)
    return new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  if (body.length < 5) return new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  if ((body[0]! & 0b01) !== 0)
    return new ConnectError("protocol error: compressed message without grpc-encoding", Code.Internal);
  const n = body.readUInt32BE(1);
  if (body.length !== 5 + n)
    return new ConnectError(
      body.length < 5 + n
        ? "protocol error: incomplete envelope"
        : "protocol error: received extra input message for unary method",
      body.length < 5 + n ? Code.InvalidArgument : Code.Unimplemented,
    );
  return body.subarray(5);
}

function envelope(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + bytes.length);
  out[0] = 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/** The whole request body, or the error the call ends with: past `max` bytes, reset, or failed. */
async function readBody(req: Http2ServerRequest, max: number): Promise<Buffer> {
  const read = await readBodyBounded(req, max, "drain");
  if (read.kind === "ok") return read.bytes;
  if (read.kind === "too_large")
    throw new ConnectError(`message size is larger than configured readMaxBytes ${max}`, Code.ResourceExhausted);
  if (read.error) throw new ConnectError(read.error.message, Code.Aborted);
  throw new ConnectError("the caller closed the stream before its request ended", Code.Canceled);
}

/**
 * Connect's handler context for one call (the fields of `createHandlerContext`'s), with one
 * AbortController: the caller's reset, the deadline and the call's end abort it directly,
 * where `createHandlerContext` links a deadline controller and the request's into a third.
 */
function handlerContext(
  o: { service: DescService; contextValues?: ((req: Http2ServerRequest) => ContextValues) | undefined },
  method: DescMethodUnary,
  req: Http2ServerRequest,
  timeoutMs: number | undefined,
): { context: HandlerContext; abort: AbortController; deadline: NodeJS.Timeout | undefined } {
  const abort = new AbortController();
  let deadline: NodeJS.Timeout | undefined;
  let remaining: () => number | undefined = noTimeout;
  if (timeoutMs !== undefined) {
    const at = Date.now() + timeoutMs;
    remaining = () => at - Date.now();
    if (timeoutMs <= 0) abort.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    else
      deadline = setTimeout(
        () => abort.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
        timeoutMs,
      );
  }
  const context: HandlerContext = {
    service: o.service,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: `http://${req.authority}${req.url}`,
    signal: abort.signal,
    timeoutMs: remaining,
    requestHeader: new Headers(requestHeaders(req)),
    responseHeader: new Headers(RESPONSE_HEADER),
    responseTrailer: new Headers(RESPONSE_TRAILER),
    values: o.contextValues ? o.contextValues(req) : createContextValues(),
  };
  return { context, abort, deadline };
}

const noTimeout = (): undefined => undefined;
const RESPONSE_HEADER = { "content-type": "application/grpc+proto" } as const;
const RESPONSE_TRAILER = { "grpc-status": "0" } as const;

/**
 * A handler for `service`'s unary methods over gRPC (binary, identity encoding); everything
 * else goes to `fallback` (Connect's node adapter for the same service). `contextValues` is
 * Connect's option of that name: the values a call's context starts with.
 */
export function createUnaryServer<S extends DescService>(o: {
  service: S;
  impl: ServiceImpl<S>;
  interceptors: Interceptor[];
  readMaxBytes: number;
  fallback: Handler;
  contextValues?: ((req: Http2ServerRequest) => ContextValues) | undefined;
}): Handler {
  const methods = new Map<string, { method: DescMethodUnary; spec: ReturnType<typeof createMethodImplSpec> }>();
  for (const method of o.service.methods) {
    if (method.methodKind !== "unary") continue;
    const fn = (o.impl as Record<string, unknown>)[method.localName];
    if (typeof fn !== "function") continue;
    methods.set(`/${o.service.typeName}/${method.name}`, {
      method: method as DescMethodUnary,
      spec: createMethodImplSpec(method, (fn as (...a: unknown[]) => unknown).bind(o.impl) as never),
    });
  }
  return (req, res) => {
    const entry = req.method === "POST" ? methods.get(req.url) : undefined;
    const type = req.headers["content-type"];
    const encoding = req.headers["grpc-encoding"];
    if (
      !entry ||
      (type !== "application/grpc" && type !== "application/grpc+proto") ||
      (encoding !== undefined && encoding !== "identity")
    )
      return o.fallback(req, res);
    void serve(o, entry.method, entry.spec, req, res);
  };
}

async function serve(
  o: {
    service: DescService;
    interceptors: Interceptor[];
    readMaxBytes: number;
    contextValues?: ((req: Http2ServerRequest) => ContextValues) | undefined;
  },
  method: DescMethodUnary,
  spec: ReturnType<typeof createMethodImplSpec>,
  req: Http2ServerRequest,
  res: Http2ServerResponse,
): Promise<void> {
  const timeout = parseTimeout(firstValue(req.headers["grpc-timeout"]), NO_MAX_TIMEOUT);
  const { context, abort, deadline } = handlerContext(o, method, req, timeout.timeoutMs);
  // A stream reset by the caller (its deadline, its shutdown) aborts the handler's signal, as in Connect.
  const onClose = () => {
    if (!res.writableEnded && !abort.signal.aborted)
      abort.abort(new ConnectError("the caller closed the stream", Code.Canceled));
  };
  req.once("close", onClose);
  let message: Uint8Array | undefined;
  try {
    if (timeout.error) throw timeout.error;
    const bytes = unwrap(await readBody(req, o.readMaxBytes));
    if (bytes instanceof ConnectError) throw bytes;
    let input: MessageShape<DescMessage>;
    try {
      input = fromBinary(method.input, bytes);
    } catch (e) {
      throw new ConnectError(`parse binary: ${(e as Error).message}`, Code.Internal);
    }
    const output = await invokeUnaryImplementation(spec as never, context, input, o.interceptors);
    message = toBinary(method.output, output as MessageShape<DescMessage>);
  } catch (e) {
    setTrailerStatus(
      context.responseTrailer,
      e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e),
    );
  } finally {
    clearTimeout(deadline);
    if (!abort.signal.aborted) abort.abort(CALL_DONE);
    req.off("close", onClose);
  }
  if (res.destroyed || res.writableEnded) return;
  respond(res, context, message);
}

/**
 * The answer on the call's HTTP/2 stream itself (headers, then the one message ending the
 * stream), which the compat response's writeHead/write/end wrap in more work per call; the
 * status trailers still go through the compat response's own trailer hook. The same frames in
 * the same order.
 */
function respond(res: Http2ServerResponse, context: HandlerContext, message: Uint8Array | undefined): void {
  const stream = res.stream;
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  const headers: Record<string, string | number> = nodeHeaders(context.responseHeader);
  headers[":status"] = 200;
  // The compat response sends its trailers when the stream asks for them (its own wantTrailers listener).
  res.addTrailers(nodeHeaders(context.responseTrailer));
  stream.respond(headers, { waitForTrailers: true });
  if (message) stream.end(envelope(message));
  else stream.end();
}
