/**
 * What happened on the wire to one forwarded tools/call, seen from the bridge's own fetch.
 * The SDK client folds every failure into one exception (or, when a response stream simply
 * ends, into a wait until its timeout), but the bridge must tell apart an explicit refusal
 * before admission (the only case that allows a retry), a refused connection (nothing left
 * this machine), and a lost answer (the call may have run: uncertain, never replayed).
 * So the bridge's fetch tags each tools/call POST and reads its answer stream alongside
 * the SDK, with the same SSE parser the SDK uses.
 */
import { EventSourceParserStream } from "eventsource-parser/stream";

export const ATTEMPT_META_KEY = "clankie/bridge-attempt";

export type PostFate =
  /** The controller's answer to this request came back (a result or a JSON-RPC error). */
  | { kind: "answered" }
  /** An HTTP error status; `body` is its text, judged by the caller. */
  | { kind: "rejected"; status: number; body: string }
  /** The TCP connection was refused: the request never left this machine. */
  | { kind: "refused"; detail: string }
  /** The request may have reached the controller, and no answer came back. */
  | { kind: "lost"; detail: string };

interface Watcher {
  requestId: string | number;
  settle: (f: PostFate) => void;
}

function errorCode(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < 4; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

function describe(e: unknown): string {
  const code = errorCode(e);
  const msg = e instanceof Error ? e.message : String(e);
  return code ? `${msg} (${code})` : msg;
}

/** The attempt tag and JSON-RPC id of a tools/call body, if it is one the bridge tagged. */
function taggedCall(body: unknown): { attempt: string; requestId: string | number } | undefined {
  if (typeof body !== "string" || !body.includes(ATTEMPT_META_KEY)) return undefined;
  try {
    const msg = JSON.parse(body) as {
      method?: string;
      id?: string | number;
      params?: { _meta?: Record<string, unknown> };
    };
    const attempt = msg.params?._meta?.[ATTEMPT_META_KEY];
    if (msg.method !== "tools/call" || typeof attempt !== "string" || msg.id === undefined) return undefined;
    return { attempt, requestId: msg.id };
  } catch {
    return undefined;
  }
}

function isResponseTo(data: unknown, id: string | number): boolean {
  const one = (m: unknown) =>
    typeof m === "object" && m !== null && (m as { id?: unknown }).id === id && ("result" in m || "error" in m);
  return Array.isArray(data) ? data.some(one) : one(data);
}

export class PostWatch {
  private readonly waiting = new Map<string, (f: PostFate) => void>();

  /** Registers an attempt before its request is sent; the promise settles once with its fate. */
  expect(attempt: string): Promise<PostFate> {
    return new Promise((resolve) => this.waiting.set(attempt, resolve));
  }

  forget(attempt: string): void {
    this.waiting.delete(attempt);
  }

  /** A fetch for StreamableHTTPClientTransport, over the global fetch. */
  readonly fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    this.watched(globalThis.fetch, input, init);

  /** The same, over BASE (e.g. one that trusts the fleet CA off loopback). */
  fetchVia(base: typeof fetch): typeof fetch {
    return ((input: string | URL | Request, init?: RequestInit) => this.watched(base, input, init)) as typeof fetch;
  }

  private readonly watched = async (
    fetch: typeof globalThis.fetch,
    input: string | URL | Request,
    init?: RequestInit,
  ): Promise<Response> => {
    const tag = taggedCall(init?.body);
    const resolve = tag && this.waiting.get(tag.attempt);
    if (!tag || !resolve) return fetch(input, init);
    this.waiting.delete(tag.attempt);
    const w: Watcher = { requestId: tag.requestId, settle: resolve };
    let res: Response;
    try {
      res = await fetch(input, init);
    } catch (e) {
      w.settle(
        errorCode(e) === "ECONNREFUSED"
          ? { kind: "refused", detail: describe(e) }
          : { kind: "lost", detail: `the request failed on the way: ${describe(e)}` },
      );
      throw e;
    }
    if (!res.ok) {
      const body = await res
        .clone()
        .text()
        .catch(() => "");
      w.settle({ kind: "rejected", status: res.status, body });
      return res;
    }
    const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
    if (!res.body) {
      w.settle({ kind: "lost", detail: `HTTP ${res.status} with no body` });
      return res;
    }
    if (type === "application/json") {
      res
        .clone()
        .json()
        .then(
          (data) =>
            w.settle(
              isResponseTo(data, w.requestId)
                ? { kind: "answered" }
                : { kind: "lost", detail: "the answer did not carry this call's result" },
            ),
          (e) => w.settle({ kind: "lost", detail: `the answer broke off: ${describe(e)}` }),
        );
      return res;
    }
    if (type !== "text/event-stream") {
      w.settle({ kind: "lost", detail: `unexpected content type ${type || "(none)"}` });
      return res;
    }
    const [forSdk, forWatch] = res.body.tee();
    void this.readStream(forWatch, w);
    return new Response(forSdk, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  private async readStream(stream: ReadableStream<Uint8Array>, w: Watcher): Promise<void> {
    const reader = stream
      .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
      .pipeThrough(new EventSourceParserStream())
      .getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (!value.data || (value.event && value.event !== "message")) continue;
        let data: unknown;
        try {
          data = JSON.parse(value.data);
        } catch {
          continue;
        }
        if (isResponseTo(data, w.requestId)) {
          w.settle({ kind: "answered" });
          await reader.cancel().catch(() => {});
          return;
        }
      }
      w.settle({ kind: "lost", detail: "the controller's answer stream ended without this call's result" });
    } catch (e) {
      w.settle({ kind: "lost", detail: `the controller's answer stream broke: ${describe(e)}` });
    }
  }
}
