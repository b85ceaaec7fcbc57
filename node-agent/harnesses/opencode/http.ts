/**
 * A small HTTP client for an OpenCode server on loopback that says exactly how far a request
 * got: never connected (nothing can have reached OpenCode: definite not-sent), answered
 * (with its status), or lost after the connection opened (it may have been acted on).
 * node:http rather than fetch, because fetch cannot tell the first from the last.
 */
import { request } from "node:http";

export type HttpOutcome =
  | { kind: "answered"; status: number; body: string }
  | { kind: "not_connected"; detail: string }
  | { kind: "lost"; detail: string };

export interface OpenCodeEndpoint {
  baseUrl: string;
  /** Basic-auth password (OPENCODE_SERVER_PASSWORD); the user name is "opencode". */
  password?: string | undefined;
  username?: string | undefined;
}

export interface HttpCall {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  timeoutMs: number;
}

export function callOpenCode(endpoint: OpenCodeEndpoint, call: HttpCall): Promise<HttpOutcome> {
  const url = new URL(call.path, endpoint.baseUrl);
  const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body), "utf8");
  const headers: Record<string, string> = { accept: "application/json" };
  if (payload) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(payload.length);
  }
  if (endpoint.password !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${endpoint.username ?? "opencode"}:${endpoint.password}`).toString("base64")}`;
  }
  return new Promise((resolve) => {
    let connected = false;
    let settled = false;
    const done = (o: HttpOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    // A fresh connection per call (agent:false): "connected" then means this request's own socket.
    const req = request(url, { method: call.method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        done({ kind: "answered", status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", (e) => done({ kind: "lost", detail: `the response broke off: ${e.message}` }));
      res.on("aborted", () => done({ kind: "lost", detail: "the response was cut off" }));
    });
    req.on("socket", (s) => s.once("connect", () => (connected = true)));
    req.on("error", (e) =>
      done(
        connected
          ? { kind: "lost", detail: `connection failed after the request began: ${e.message}` }
          : { kind: "not_connected", detail: `could not connect to ${url.origin}: ${e.message}` },
      ),
    );
    const timer = setTimeout(() => {
      done(
        connected
          ? { kind: "lost", detail: `no answer within ${call.timeoutMs} ms` }
          : { kind: "not_connected", detail: `could not connect within ${call.timeoutMs} ms` },
      );
      req.destroy();
    }, call.timeoutMs);
    req.end(payload);
  });
}

/** Parses a JSON body, or undefined when it is not JSON. */
export function jsonBody<T>(o: HttpOutcome): T | undefined {
  if (o.kind !== "answered") return undefined;
  try {
    return JSON.parse(o.body) as T;
  } catch {
    return undefined;
  }
}
