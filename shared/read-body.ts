/**
 * Reads a request body up to a limit without ever holding more than the limit, for the
 * controller's HTTP/1 endpoints and the agent's HTTP/2 unary calls alike. A body that declares
 * or reaches more stops being kept. What happens to the rest is the caller's choice: an HTTP/1
 * listener pauses and closes the connection after its 413 (a client never reuses a half-read
 * socket); an HTTP/2 stream drains it, so its own gRPC status can still be sent on the stream.
 * It settles once: a stream's normal close after its end costs nothing.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";

export type BodyRead =
  | { kind: "ok"; bytes: Buffer }
  | { kind: "too_large" }
  | { kind: "aborted"; error: Error | undefined };

/** What both `IncomingMessage` and `Http2ServerRequest` are. */
export type BodySource = Readable & { readonly headers: IncomingHttpHeaders };

export function readBodyBounded(
  req: BodySource,
  maxBytes: number,
  overflow: "pause" | "drain" = "pause",
): Promise<BodyRead> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    if (overflow === "drain") req.resume();
    return Promise.resolve({ kind: "too_large" });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (r: BodyRead) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        chunks.length = 0;
        done({ kind: "too_large" });
        if (overflow === "pause") req.pause();
        else req.resume();
        return;
      }
      chunks.push(chunk);
    };
    // One chunk (the usual small call) is used as it came, not copied.
    const onEnd = () => done({ kind: "ok", bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onError = (e: Error) => done({ kind: "aborted", error: e });
    // Closed before the body ended (a reset, a dropped socket): nothing more is coming. (An HTTP/2
    // request's `complete` is true once its stream closes, so it cannot tell a reset apart.)
    const onClose = () => done({ kind: "aborted", error: undefined });
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
