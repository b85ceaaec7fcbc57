/**
 * Reads a request body up to a limit without ever holding more than the limit. A body that
 * declares or reaches more stops being read: the caller answers 413, and the listener
 * closes the connection after that answer, so the client never reuses a half-read socket.
 */
import type { IncomingMessage } from "node:http";

export type BodyRead = { kind: "ok"; bytes: Buffer } | { kind: "too_large" } | { kind: "aborted" };

export function readBodyBounded(req: IncomingMessage, maxBytes: number): Promise<BodyRead> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve({ kind: "too_large" });
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
        req.pause();
        chunks.length = 0;
        return done({ kind: "too_large" });
      }
      chunks.push(chunk);
    };
    const onEnd = () => done({ kind: "ok", bytes: Buffer.concat(chunks, size) });
    const onError = () => done({ kind: "aborted" });
    const onClose = () => {
      if (!req.complete) done({ kind: "aborted" });
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
