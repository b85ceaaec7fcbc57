/**
 * The controller's unary calls to an agent over its reverse link (issue 17 item 2, ADR 0014
 * addendum 3). A Connect `Transport`: the client stays Connect's `createClient`, interceptors
 * are Connect's, the session is Connect's `Http2SessionManager` (PING keep-alive, the agent's
 * socket), and the gRPC protocol's headers, response and trailer checks are Connect's own
 * (`@connectrpc/connect/protocol-grpc`). What it replaces is only the per-call stream
 * pipeline of `createGrpcTransport` for a unary call — async generators on both directions,
 * a linked AbortController + deadline signal aborted (a DOMException) at every call's end —
 * which the profile put at about a quarter of the controller's CPU per delivery. Streaming
 * methods go to Connect's own transport unchanged.
 *
 * Failure typing (the delivery's definite vs uncertain rests on it, shared/errors.ts): only a
 * gRPC status the agent sent can carry a code that means "refused before writing"; anything
 * the transport sees itself (a reset stream, a socket error, the deadline, the caller's abort)
 * is Unavailable, Canceled or DeadlineExceeded — uncertain once the request may have left.
 */
import {
  constants as h2,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type IncomingHttpStatusHeader,
} from "node:http2";
import type { DescMessage, DescMethodUnary, MessageShape } from "@bufbuild/protobuf";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  type ContextValues,
  type Interceptor,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { requestHeader, validateResponse, validateTrailer } from "@connectrpc/connect/protocol-grpc";
import type { Http2SessionManager } from "@connectrpc/connect-node";

/** An answer larger than this is refused (Connect's default readMaxBytes is 4 GiB; an agent's answer is a few kB). */
const MAX_ANSWER_BYTES = 16 << 20;

type UnaryFn = (req: UnaryRequest) => Promise<UnaryResponse>;

/** Node's header object → Web Headers (what Connect's protocol checks read). */
function webHeaders(h: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const k in h) {
    if (k.charCodeAt(0) === 58 /* ":" pseudo-header */) continue;
    const v = h[k];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.append(k, x);
    else out.set(k, String(v));
  }
  return out;
}

function nodeHeaders(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => (out[k] = v));
  return out;
}

/** One gRPC length-prefixed message, uncompressed. */
function envelope(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + bytes.length);
  out[0] = 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

/** The single message of a unary answer's body, or undefined for a trailers-only answer. */
function unwrap(body: Buffer): Uint8Array | undefined {
  if (body.length === 0) return undefined;
  if (body.length < 5) throw new ConnectError("protocol error: incomplete envelope", Code.Internal);
  if ((body[0]! & 0b01) !== 0)
    throw new ConnectError("protocol error: compressed answer, none was accepted", Code.Internal);
  const n = body.readUInt32BE(1);
  if (body.length !== 5 + n)
    throw new ConnectError(
      body.length < 5 + n
        ? "protocol error: incomplete envelope"
        : "protocol error: received extra output message for unary method",
      body.length < 5 + n ? Code.Internal : Code.Unimplemented,
    );
  return body.subarray(5);
}

/** A transport failure seen here, never a code the agent alone may send (see the header). */
function transportError(e: unknown): ConnectError {
  if (e instanceof ConnectError) return e;
  return new ConnectError(e instanceof Error ? e.message : String(e), Code.Unavailable, undefined, undefined, e);
}

/** One unary exchange on a stream the session manager opened: write, read, check status. */
function exchange(
  stream: ClientHttp2Stream,
  sessions: Http2SessionManager,
  body: Buffer,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
): Promise<{ header: Headers; trailer: Headers; body: Buffer; headerError: ConnectError | undefined }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let header: Headers | undefined;
    let headerError: ConnectError | undefined;
    let trailer = new Headers();
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (e?: unknown) => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (e !== undefined) {
        if (!stream.closed)
          stream.close(
            e instanceof ConnectError && e.code === Code.Canceled ? h2.NGHTTP2_CANCEL : h2.NGHTTP2_INTERNAL_ERROR,
          );
        reject(transportError(e));
        return;
      }
      resolve({
        header: header ?? new Headers(),
        headerError,
        trailer,
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size),
      });
    };
    const onAbort = () =>
      finish(
        new ConnectError(
          `the call was aborted: ${String((signal?.reason as Error | undefined)?.message ?? signal?.reason)}`,
          Code.Canceled,
          undefined,
          undefined,
          signal?.reason,
        ),
      );
    if (signal) signal.addEventListener("abort", onAbort, { once: true });
    if (timeoutMs !== undefined)
      timer = setTimeout(() => finish(new ConnectError("the operation timed out", Code.DeadlineExceeded)), timeoutMs);
    stream.on("response", (h: IncomingHttpHeaders & IncomingHttpStatusHeader) => {
      header = webHeaders(h);
      try {
        // A trailers-only answer carries its grpc-status in these headers.
        headerError = validateResponse(h[":status"] ?? 0, header).headerError;
      } catch (e) {
        finish(e);
      }
    });
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES)
        return finish(new ConnectError(`the answer exceeds ${MAX_ANSWER_BYTES} bytes`, Code.ResourceExhausted));
      chunks.push(chunk);
      sessions.notifyResponseByteRead(stream);
    });
    stream.on("trailers", (t: IncomingHttpHeaders) => {
      trailer = webHeaders(t);
    });
    stream.on("error", (e: Error) => finish(e));
    stream.on("close", () => {
      if (done) return;
      // Closed without a clean end: the answer is lost (the request may have been handled).
      if (stream.rstCode !== h2.NGHTTP2_NO_ERROR || header === undefined) {
        return finish(
          new ConnectError(
            `http/2 stream closed with error code 0x${stream.rstCode.toString(16)}`,
            stream.rstCode === h2.NGHTTP2_CANCEL ? Code.Canceled : Code.Unavailable,
          ),
        );
      }
      finish();
    });
    stream.end(body);
  });
}

/**
 * A Connect transport for unary calls on `sessions`; `stream` calls go to `fallback`
 * (Connect's own gRPC transport on the same session manager).
 */
export function createUnaryLinkTransport(o: {
  baseUrl: string;
  sessions: Http2SessionManager;
  interceptors: Interceptor[];
  fallback: Transport;
}): Transport {
  // The path is the method's; the authority is the session's.
  const final: UnaryFn = async (req) => {
    const method = req.method as DescMethodUnary;
    const path = `/${method.parent.typeName}/${method.name}`;
    if (req.signal.aborted) throw new ConnectError("the call was aborted before it was sent", Code.Canceled);
    const body = envelope(toBinary(method.input, req.message as MessageShape<DescMessage>));
    let stream: ClientHttp2Stream;
    try {
      stream = await o.sessions.request("POST", path, nodeHeaders(req.header), {});
    } catch (e) {
      throw transportError(e);
    }
    const timeoutMs = (req as UnaryRequest & { timeoutMs?: number }).timeoutMs;
    const answer = await exchange(stream, o.sessions, body, req.signal, timeoutMs);
    const bytes = unwrap(answer.body);
    validateTrailer(answer.trailer, answer.header);
    const { headerError } = answer;
    if (bytes === undefined) {
      if (headerError) throw headerError;
      throw new ConnectError(
        "protocol error: missing output message for unary method",
        answer.trailer.has("grpc-status") ? Code.Unimplemented : Code.Unknown,
      );
    }
    if (headerError)
      throw new ConnectError(
        "protocol error: received output message for unary method with error status",
        Code.Unknown,
      );
    return {
      stream: false,
      service: method.parent,
      method,
      header: answer.header,
      trailer: answer.trailer,
      message: fromBinary(method.output, bytes),
    } as UnaryResponse;
  };
  // Built once: the interceptor chain is the same for every call on this link.
  let run: UnaryFn = final;
  for (const i of [...o.interceptors].reverse()) run = i(run as Parameters<Interceptor>[0]) as UnaryFn;
  // Node's signal for "no caller signal": never aborts, allocated once.
  const never = new AbortController().signal;
  return {
    async unary(method, signal, timeoutMs, header, message, contextValues?: ContextValues) {
      const t = timeoutMs === undefined || timeoutMs <= 0 ? undefined : timeoutMs;
      const req = {
        stream: false as const,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: `${o.baseUrl}/${method.parent.typeName}/${method.name}`,
        header: requestHeader(true, t, header),
        contextValues: contextValues ?? createContextValues(),
        // A plain init object becomes the message (a message passes through as is), as Connect's runUnaryCall does.
        message: create(method.input, message),
        signal: signal ?? never,
        timeoutMs: t,
      };
      try {
        return (await run(req as UnaryRequest)) as never;
      } catch (e) {
        throw ConnectError.from(e);
      }
    },
    stream: (...args) => o.fallback.stream(...args),
  };
}
