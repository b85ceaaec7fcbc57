/**
 * The leads' MCP endpoint (streamable HTTP, one McpServer per session). Every request
 * carries a lead bearer token; a session is bound to the token's conversation and
 * answers 404 to any other token, so a conversation only ever sees its own receipts.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { bearerFrom } from "../../shared/tokens.js";
import type { Logger } from "../../shared/logger.js";
import type { ConversationAuth } from "../leads/conversations.js";
import type { PipelineDeps } from "../delivery/message-seat.js";
import type { StatusDeps } from "../services/status-service.js";
import { registerMessageSeat } from "./tools/message-seat.js";
import { registerReconcileSeatCall } from "./tools/reconcile-seat-call.js";
import { registerListSeats } from "./tools/list-seats.js";
import { registerWorkerReports } from "./tools/worker-reports.js";
import { registerStopTask } from "./tools/stop-task.js";

export const MCP_PATH = "/mcp";
const MAX_BODY_BYTES = 1 << 20;

interface Session {
  conversationId: string;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
}

export interface McpEndpoint {
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  closeAll(): Promise<void>;
  sessionCount(): number;
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error("request body over 1 MiB");
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

export function createMcpEndpoint(deps: { pipeline: PipelineDeps; status: StatusDeps; conversations: ConversationAuth; logger: Logger; version: string }): McpEndpoint {
  const sessions = new Map<string, Session>();
  // Responses still being written; a stop lets them finish so an in-flight call's answer is not lost.
  const open = new Set<ServerResponse>();

  const newSession = (conversationId: string): Session => {
    const server = new McpServer({ name: "clankie-fleet", version: deps.version }, { capabilities: { tools: {} } });
    registerMessageSeat(server, deps.pipeline, conversationId);
    registerReconcileSeatCall(server, deps.pipeline, conversationId);
    registerListSeats(server, deps.status);
    registerWorkerReports(server, deps.pipeline, conversationId);
    registerStopTask(server, deps.pipeline, conversationId);
    const session: Session = {
      conversationId,
      server,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, session);
        },
      }),
    };
    session.transport.onclose = () => {
      if (session.transport.sessionId) sessions.delete(session.transport.sessionId);
    };
    return session;
  };

  return {
    sessionCount: () => sessions.size,
    async handle(req, res) {
      if (req.method === "POST") {
        open.add(res);
        res.once("close", () => open.delete(res));
      }
      const conversationId = await deps.conversations.conversationFor(bearerFrom(req.headers.authorization)).catch(() => undefined);
      if (!conversationId) {
        return jsonRpcError(res, 401, -32001, "missing or wrong bearer token", { "www-authenticate": 'Bearer realm="clankie"' });
      }
      if (deps.pipeline.isStopping()) return jsonRpcError(res, 503, -32000, "service_stopping: the controller is stopping; nothing was dispatched");
      const sessionHeader = req.headers["mcp-session-id"];
      const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
      let body: unknown;
      if (req.method === "POST") {
        try {
          body = await readJson(req);
        } catch (e) {
          return jsonRpcError(res, 400, -32700, `parse error: ${(e as Error).message}`);
        }
      }
      if (sessionId) {
        const session = sessions.get(sessionId);
        // Another conversation's session is indistinguishable from an unknown one.
        if (!session || session.conversationId !== conversationId) return jsonRpcError(res, 404, -32001, "unknown_session: start a new MCP session");
        return session.transport.handleRequest(req, res, body);
      }
      if (req.method !== "POST" || !isInitializeRequest(body)) {
        return jsonRpcError(res, 400, -32000, "no mcp-session-id: the first request must be initialize");
      }
      const session = newSession(conversationId);
      await session.server.connect(session.transport);
      await session.transport.handleRequest(req, res, body);
    },
    async closeAll() {
      const deadline = Date.now() + 2000;
      while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.allSettled(all.map((s) => s.server.close()));
    },
  };
}
