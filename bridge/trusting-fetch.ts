/**
 * A fetch that trusts one CA, for `clankie mcp` talking to a controller that listens off
 * loopback over TLS (its fleet CA is `<state dir>/fleet-ca.pem`). Built on node:https so no
 * process-wide trust store is touched; the answer streams (SSE) as Node's fetch would.
 */
import { request } from "node:https";
import { Readable } from "node:stream";

export function fetchTrusting(ca: string): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    const headers = new Headers(init?.headers);
    const body =
      init?.body === undefined || init.body === null
        ? undefined
        : typeof init.body === "string"
          ? init.body
          : Buffer.from(await new Response(init.body).arrayBuffer());
    return new Promise<Response>((resolve, reject) => {
      const req = request(
        url,
        {
          method: init?.method ?? "GET",
          headers: Object.fromEntries(headers.entries()),
          ca: [ca],
          signal: init?.signal ?? undefined,
        },
        (res) => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
          const status = res.statusCode ?? 500;
          const stream = status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
          resolve(new Response(stream, { status, headers: h }));
        },
      );
      // A refused connection keeps its code (ECONNREFUSED): the bridge tells "not sent" from "lost" by it.
      req.on("error", reject);
      if (body !== undefined) req.end(body);
      else req.end();
    });
  }) as typeof fetch;
}
