/**
 * The well-behaved lead of the front-door section: `message_seat` over MCP streamable HTTP
 * with its lead token, one call at a time, a fresh deliveryId each. Written on node:http
 * rather than the SDK client so that the connection is ours to choose (a kept-alive one, or a
 * FRESH connection per request while slow header senders fill the connection table) and so
 * that a transport failure keeps its own code (ECONNRESET, a timeout) instead of "fetch failed".
 */
import { Agent, request } from "node:http";
import { randomUUID } from "node:crypto";

const PROTOCOL_VERSION = "2025-06-18";
/** The error a call without an answer in `timeoutMs` counts as. */
export const LEAD_TIMEOUT = "lead_timeout";

export interface LeadCall {
  /** performance.now() at the call's start and at its answer or failure. */
  start: number;
  end: number;
  /** `delivered`; a refusal's `outcome/reason` (tool) or `http_<status>/<reason>` (transport); or an error's code. */
  result: string;
  kind: "delivered" | "refused" | "error";
}

interface ToolAnswer {
  result?: { structuredContent?: { outcome?: string; reason?: string }; isError?: boolean };
  error?: { code?: number };
}

interface Answer {
  status: number;
  sessionId: string | undefined;
  body: string;
}

export interface LeadOptions {
  mcpUrl: string;
  token: string;
  /** A new TCP connection per request (`Connection: close`) instead of one kept alive. */
  fresh: boolean;
  /** A call with no answer by then counts as the error `lead_timeout`. */
  timeoutMs: number;
}

export class BenchLead {
  private sessionId: string | undefined;
  private readonly agent: Agent | false;
  private readonly url: URL;

  constructor(private readonly o: LeadOptions) {
    this.url = new URL(o.mcpUrl);
    this.agent = o.fresh ? false : new Agent({ keepAlive: true, maxSockets: 1 });
  }

  /** initialize + notifications/initialized: the session every later call names. */
  async open(): Promise<void> {
    this.sessionId = undefined;
    const clientInfo = { name: "clankie-bench-front-door-lead", version: "0.0.0" };
    const params = { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo };
    const init = await this.post({ jsonrpc: "2.0", id: 0, method: "initialize", params });
    if (init.status !== 200 || !init.sessionId) {
      throw new Error(`MCP initialize answered ${init.status}: ${init.body.slice(0, 200)}`);
    }
    this.sessionId = init.sessionId;
    await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
  }

  /** One call; `deliveryId` is a fresh one unless the caller must find the delivery afterwards. */
  async messageSeat(seat: string, message: string, deliveryId: string = randomUUID()): Promise<LeadCall> {
    const start = performance.now();
    const done = (kind: LeadCall["kind"], result: string): LeadCall => ({
      start,
      end: performance.now(),
      kind,
      result,
    });
    try {
      const meta = { "clankie/seat-call": { deliveryId } };
      const params = { name: "message_seat", arguments: { seat, message }, _meta: meta };
      const a = await this.post({ jsonrpc: "2.0", id: 1, method: "tools/call", params });
      if (a.status !== 200) {
        // A session the controller dropped is reopened for the next call; this one is refused.
        if (a.status === 404) this.sessionId = undefined;
        return done("refused", `http_${a.status}/${transportReason(a.body)}`);
      }
      const body = JSON.parse(a.body) as ToolAnswer;
      if (body.error) return done("refused", `jsonrpc_${body.error.code ?? "error"}`);
      const sc = body.result?.structuredContent;
      const outcome = sc?.outcome ?? (body.result?.isError ? "error" : "unknown");
      if (outcome === "delivered") return done("delivered", outcome);
      return done("refused", sc?.reason ? `${outcome}/${sc.reason}` : outcome);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      return done("error", err.code ?? err.message.slice(0, 60));
    } finally {
      if (this.sessionId === undefined) await this.open().catch(() => {});
    }
  }

  close(): void {
    if (this.agent) this.agent.destroy();
  }

  /** Ends the session on the controller (an MCP DELETE), then closes the connection. */
  async end(): Promise<void> {
    if (this.sessionId) await this.post(undefined, "DELETE").catch(() => {});
    this.sessionId = undefined;
    this.close();
  }

  private post(body: unknown, method: "POST" | "DELETE" = "POST"): Promise<Answer> {
    const payload = Buffer.from(body === undefined ? "" : JSON.stringify(body));
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${this.o.token}`,
      "mcp-protocol-version": PROTOCOL_VERSION,
      "content-length": String(payload.length),
    };
    if (this.sessionId) headers["mcp-session-id"] = this.sessionId;
    if (this.o.fresh) headers.connection = "close";
    return new Promise<Answer>((resolve, reject) => {
      const target = { host: this.url.hostname, port: this.url.port, path: this.url.pathname };
      const req = request({ ...target, method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          clearTimeout(timer);
          const sid = res.headers["mcp-session-id"];
          const sessionId = Array.isArray(sid) ? sid[0] : sid;
          resolve({ status: res.statusCode ?? 0, sessionId, body: Buffer.concat(chunks).toString("utf8") });
        });
        res.on("error", reject);
      });
      const timeout = () => req.destroy(Object.assign(new Error("no answer in time"), { code: LEAD_TIMEOUT }));
      const timer = setTimeout(timeout, this.o.timeoutMs);
      req.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      req.end(payload);
    });
  }
}

/** The controller's refusal code from a JSON-RPC error body (`data.reason`), else `error`. */
function transportReason(body: string): string {
  try {
    const reason = (JSON.parse(body) as { error?: { data?: { reason?: unknown } } }).error?.data?.reason;
    return typeof reason === "string" ? reason.slice(0, 40) : "error";
  } catch {
    return "error";
  }
}

/**
 * Calls `message_seat` one after another until `stopped()` says so, `gapMs` apart, and
 * returns every call. The calls are what the section splits into before, during and after.
 */
export async function leadLoop(
  lead: BenchLead,
  seat: string,
  gapMs: number,
  stopped: () => boolean,
): Promise<LeadCall[]> {
  const calls: LeadCall[] = [];
  for (let i = 0; !stopped(); i++) {
    calls.push(await lead.messageSeat(seat, `front door bench ${i}`));
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
  return calls;
}
